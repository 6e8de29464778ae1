// A route's state as a badge, in the colours every page shares. A held route reads Failed,
// hatched, and names the provider's reason when hovered (reference: "The status badge").
import { html } from '../lib/html.js'
import { STATE_LABELS, reasonLabel } from '../lib/format.js'

/** `hold` is the matching entry of GET /api/adaptive-routing/conditions, when the route is held. */
export function StatusBadge({ state, held = false, hold = null }) {
  const shown = held ? 'failed' : state
  const title = hold
    ? `Held: ${reasonLabel(hold.reason)}. ${hold.provider} said: “${hold.message}”`
    : held
      ? 'Held: the provider refused this key'
      : STATE_LABELS[state] ?? state
  return html`<span class=${`badge state-${shown}${held ? ' held' : ''}`} title=${title} data-state=${shown}>
    ${STATE_LABELS[shown] ?? shown}${held ? html`<span class="badge-held">Held</span>` : null}
  </span>`
}
