// Request log: every request with its routing summary, filtered as GET /api/logs filters.
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { ErrorNotice, MissingApi } from '../components/notice.js'

const LOGS = '/api/logs'

export function LogsPage({ context }) {
  const { window } = context
  const page = useApi(withQuery(LOGS, { from: window.from, to: window.to, limit: 50 }), [context.tick, context.version])
  if (page.error?.status === 404) return html`<${MissingApi} path=${LOGS} what="The request log" />`
  return html`<div class="page logs"><${ErrorNotice} error=${page.error} what="Request log" /></div>`
}
