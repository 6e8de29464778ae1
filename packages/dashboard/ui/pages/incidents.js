// Adaptive Routing > Incidents: every problem routing saw in the window, combined across nodes.
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { ErrorNotice, MissingApi } from '../components/notice.js'

const ISSUES = '/api/adaptive-routing/history/issues'

export function IncidentsPage({ context }) {
  const { window } = context
  const page = useApi(withQuery(ISSUES, { from: window.from, to: window.to, limit: 25, offset: 0 }), [context.tick, context.version])
  if (page.error?.status === 404) return html`<${MissingApi} path=${ISSUES} what="Incidents" />`
  return html`<div class="page incidents"><${ErrorNotice} error=${page.error} what="Incidents" /></div>`
}
