// Every route this node routes, grouped by provider + model, as GET /api/adaptive-routing/routes
// reports them: state badge (held routes name the provider's reason on hover), weight, shares,
// error rate, latency.
import { html } from '../lib/html.js'
import { percent } from '../lib/format.js'
import { holdsOn } from '../lib/holds.js'
import { groupRoutes } from '../lib/routes.js'
import { StatusBadge } from './badge.js'
import { Card } from './notice.js'

/**
 * The routes this node routes, by provider and model, with their state badges.
 * @param {{ routes: import('../lib/answers').RoutesAnswer | undefined, conditions: import('../lib/answers').ConditionsAnswer | undefined }} props
 */
export function RoutesCard({ routes, conditions }) {
  const holdOf = (/** @type {import('../lib/answers').RouteEntry} */ route) => holdsOn(conditions?.conditions, route.provider, route.model, route.key_id)[0] ?? null
  const groups = groupRoutes(routes?.routes)
  return html`<${Card} title="Routes on this node" testid="routes">
    ${groups.size === 0
      ? html`<p class="empty">No route has been used on this node yet.</p>`
      : html`<table class="table routes">
          <thead><tr><th>Provider / model · key</th><th>State</th><th class="num">Weight</th><th class="num">Expected share</th><th class="num">Actual share</th><th class="num">Error rate</th><th class="num">Latency</th><th class="num">In flight</th></tr></thead>
          <tbody>
            ${[...groups.entries()].map(([name, members]) => html`
              <tr class="group" key=${name}><th colspan="8">${name}</th></tr>
              ${members.map((route) => html`<tr key=${`${name}:${route.key_id}`} data-testid="route" data-key=${route.key_name}>
                <td class="indent">${route.key_name}</td>
                <td><${StatusBadge} state=${route.state} held=${route.held} hold=${route.held ? holdOf(route) : null} /></td>
                <td class="num">${route.weight.toFixed(1)}</td>
                <td class="num">${percent(route.expected_share)}</td>
                <td class="num">${percent(route.actual_share)}</td>
                <td class="num">${percent(route.error_rate)}</td>
                <td class="num">${route.latency_ms === null ? '—' : `${route.latency_ms} ms`}</td>
                <td class="num">${route.in_flight}</td>
              </tr>`)}
            `)}
          </tbody>
        </table>`}
  </${Card}>`
}
