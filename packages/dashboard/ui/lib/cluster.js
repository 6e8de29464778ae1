// The cluster page's words, from GET /api/cluster.
import { plural } from './format.js'

/** @typedef {import('./answers').ClusterAnswer} ClusterAnswer */

/** "Fleet: 3 nodes up, 2 regions" */
export function clusterTitle(/** @type {ClusterAnswer} */ view) {
  return `${view.mode === 'fleet' ? 'Fleet' : 'Standalone'}: ${plural(view.members.length, 'node')} up, ${plural(Object.keys(view.regions).length, 'region')}`
}

/** What gossip dropped, by reason: "nothing", or "too_big: 2, invalid: 1". */
export function droppedText(/** @type {Record<string, number>} */ dropped) {
  const entries = Object.entries(dropped)
  return entries.length === 0 ? 'nothing' : entries.map(([reason, n]) => `${reason}: ${n}`).join(', ')
}

/** The kinds of change whose travel the node measures, as the page names them. */
export const PROPAGATION_KINDS = /** @type {const} */ ([['hold', 'Holds placed'], ['release', 'Holds released'], ['settings', 'Settings']])

/** "12 ms / 48 ms (max 51 ms)", or "none seen yet". */
export function lagText(/** @type {import('./answers').PropagationFigures} */ figures) {
  if (figures.count === 0 || figures.p50_ms === null || figures.p99_ms === null) return 'none seen yet'
  return `${ms(figures.p50_ms)} / ${ms(figures.p99_ms)} (max ${ms(figures.max_ms ?? figures.p99_ms)})`
}

/** A lag in ms as people read it: "0.4 ms", "12 ms", "2.5 s". */
export function ms(/** @type {number} */ value) {
  if (!Number.isFinite(value)) return '—'
  if (value >= 1000) return `${(value / 1000).toFixed(1)} s`
  return value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`
}

/** Gossip topics by name, the fleet-wide ones first. */
export function gossipRows(/** @type {Record<string, { in: number; out: number; dropped: number }>} */ gossip) {
  return Object.entries(gossip).sort(([a], [b]) => Number(a.includes('/region/')) - Number(b.includes('/region/')) || a.localeCompare(b))
}
