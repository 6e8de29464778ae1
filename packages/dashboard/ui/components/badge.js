// A route's state as a badge, in the colours every page shares. A held route reads Failed,
// hatched, and names the provider's reason when hovered (reference: "The status badge").
import { html } from '../lib/html.js'
import { reasonLabel, stateLabel } from '../lib/format.js'
import { shownState } from '../lib/routes.js'

/**
 * `hold` is the matching entry of GET /api/adaptive-routing/conditions, when the route is held.
 * @param {{ state: string, held?: boolean, hold?: import('../lib/answers').HoldEntry | null }} props
 */
export function StatusBadge({ state, held = false, hold = null }) {
  const shown = shownState(state, held)
  const title = hold
    ? `Held: ${reasonLabel(hold.reason)}. ${hold.provider} said: “${hold.message}”`
    : held
      ? 'Held: the provider refused this key'
      : stateLabel(state)
  return html`<span class=${`badge state-${shown}${held ? ' held' : ''}`} title=${title} data-state=${shown}>
    ${stateLabel(shown)}${held ? html`<span class="badge-held">Held</span>` : null}
  </span>`
}
