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
