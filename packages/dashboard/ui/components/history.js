// The dashboard's figures and timeline, drawn from routing history. Until this node serves the
// history API, it says so instead of drawing numbers it does not have.
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { MissingApi, ErrorNotice } from './notice.js'

export const SUMMARY_PATH = '/api/adaptive-routing/history/summary'

export function HistoryPanels({ context }) {
  const { window } = context
  const summary = useApi(withQuery(SUMMARY_PATH, { from: window.from, to: window.to }), [context.tick, context.version])
  if (summary.error?.status === 404) return html`<${MissingApi} path=${SUMMARY_PATH} what="Routing history (figures and timeline)" />`
  if (summary.error) return html`<${ErrorNotice} error=${summary.error} what="Routing history" />`
  return null
}
