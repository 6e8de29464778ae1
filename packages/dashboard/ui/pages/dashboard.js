// Adaptive Routing > Dashboard: is anything broken, do I need to act? The figures and the
// timeline of the window (routing history), the held keys, and the routes as this node sees them.
import { html } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { CONDITIONS_PATH, ROUTES_PATH } from '../lib/query.js'
import { HeldKeysCard } from '../components/held-keys.js'
import { RoutesCard } from '../components/routes.js'
import { ErrorNotice } from '../components/notice.js'
import { HistoryPanels } from '../components/history.js'

/**
 * The Dashboard page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function DashboardPage({ context }) {
  const deps = [context.tick, context.version]
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').ConditionsAnswer>} */
  const conditions = useApi(CONDITIONS_PATH, deps)
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').RoutesAnswer>} */
  const routes = useApi(ROUTES_PATH, deps)
  return html`<div class="page dashboard">
    <${HistoryPanels} context=${context} conditions=${conditions.data} />
    <${ErrorNotice} error=${conditions.error} what="Held keys" />
    <${HeldKeysCard} conditions=${conditions.data} session=${context.session} now=${context.now} onReleased=${context.reload} />
    <${ErrorNotice} error=${routes.error} what="Routes" />
    <${RoutesCard} routes=${routes.data} conditions=${conditions.data} />
  </div>`
}
