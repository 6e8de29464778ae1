// The dashboard's figures and timeline, drawn from routing history
// (GET /api/adaptive-routing/history/summary and /timeline). Until this node serves the history
// API, it says so instead of drawing numbers it does not have.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { MissingApi, ErrorNotice } from './notice.js'
import { Figures } from './figures.js'
import { Timeline } from './timeline.js'

export const SUMMARY_PATH = '/api/adaptive-routing/history/summary'
export const TIMELINE_PATH = '/api/adaptive-routing/history/timeline'

export function HistoryPanels({ context, onReady }) {
  const { window, route } = context
  const deps = [context.tick, context.version]
  const filters = { from: window.from, to: window.to, providers: route.params.providers, models: route.params.models }
  const summary = useApi(withQuery(SUMMARY_PATH, filters), deps)
  const timeline = useApi(withQuery(TIMELINE_PATH, filters), deps)
  const [open, setOpen] = useState(null)
  if (summary.error?.status === 404 && !summary.data) return html`<${MissingApi} path=${SUMMARY_PATH} what="Routing history (figures and timeline)" />`
  if (summary.data && timeline.data) onReady?.()
  return html`<div class="history">
    <${ErrorNotice} error=${summary.error} what="Routing history" />
    ${summary.data ? html`<${Figures} summary=${summary.data} open=${open} onOpen=${(name) => setOpen(open === name ? null : name)} />` : null}
    <${ErrorNotice} error=${timeline.error} what="Timeline" />
    ${timeline.data ? html`<${Timeline} timeline=${timeline.data} context=${context} />` : null}
  </div>`
}
