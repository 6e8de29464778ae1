// The dashboard's figures and timeline, drawn from routing history
// (GET /api/adaptive-routing/history/summary and /timeline). Until this node serves the history
// API, it says so instead of drawing numbers it does not have.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { dashboardPaths, SUMMARY_PATH } from '../lib/query.js'
import { MissingApi, ErrorNotice } from './notice.js'
import { Figures } from './figures.js'
import { Timeline } from './timeline.js'

export { SUMMARY_PATH, TIMELINE_PATH } from '../lib/query.js'

/**
 * `conditions` is the held keys answer the page already has (the timeline's key rows badge the keys held now).
 * @param {{ context: import('../lib/page').PageContext, conditions: import('../lib/answers').ConditionsAnswer | undefined, onReady?: () => void }} props
 */
export function HistoryPanels({ context, conditions, onReady }) {
  const { window, route } = context
  const deps = [context.tick, context.version]
  // The same URLs boot.js asked for before the views loaded (lib/query.js), so those answers are used.
  const paths = dashboardPaths(route.params, window)
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').SummaryAnswer>} */
  const summary = useApi(paths.summary, deps)
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').TimelineAnswer>} */
  const timeline = useApi(paths.timeline, deps)
  const [open, setOpen] = useState(/** @type {string | null} */ (null))
  if (summary.error?.status === 404 && !summary.data) return html`<${MissingApi} path=${SUMMARY_PATH} what="Routing history (figures and timeline)" />`
  if (summary.data && timeline.data) onReady?.()
  return html`<div class="history">
    <${ErrorNotice} error=${summary.error} what="Routing history" />
    ${summary.data ? html`<${Figures} summary=${summary.data} open=${open} onOpen=${(/** @type {string} */ name) => setOpen(open === name ? null : name)} />` : null}
    <${ErrorNotice} error=${timeline.error} what="Timeline" />
    ${timeline.data ? html`<${Timeline} timeline=${timeline.data} context=${context} conditions=${conditions} />` : null}
  </div>`
}
