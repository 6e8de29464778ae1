// The timeline's shaping (reference: "The Dashboard"), without the DOM: which slot each bucket
// fills, where an incident's bar sits in the lane, and what a dot says when hovered.
import { plural, stamp, stateLabel } from './format.js'

/** @typedef {import('./answers').TimelineAnswer} TimelineAnswer */
/** @typedef {import('./answers').TimelineBucket} TimelineBucket */
/** @typedef {import('./answers').LaneIncident} LaneIncident */

/** What a bucket's failures read as: "3 of 120 attempts failed", "none of 40 attempts failed", "no traffic". */
export function failuresText(/** @type {{ requests?: number | undefined, failed?: number | undefined }} */ bucket) {
  const requests = bucket.requests ?? 0
  const failed = bucket.failed ?? 0
  if (requests === 0 && failed === 0) return 'no traffic'
  if (failed === 0) return `none of ${plural(requests, 'attempt')} failed`
  return `${failed} of ${plural(requests, 'attempt')} failed`
}

/**
 * The timeline's grid: `slots` columns of `bucketMs` from the answer's `from` (one column when
 * the answer's times or bucket size make no grid), and the column of an instant: clamped to the
 * grid, so a bucket at the edge never falls off it; null for an instant that is not a time.
 */
export function timelineGrid(/** @type {Pick<TimelineAnswer, 'from' | 'to' | 'bucket_seconds'>} */ timeline) {
  const from = Date.parse(timeline.from)
  const to = Date.parse(timeline.to)
  const bucketMs = timeline.bucket_seconds * 1000
  const columns = Math.ceil((to - from) / bucketMs)
  const slots = Number.isFinite(columns) && columns > 1 ? columns : 1
  const slotOf = (/** @type {string} */ at) => {
    const slot = Math.floor((Date.parse(at) - from) / bucketMs)
    return Number.isNaN(slot) ? null : Math.min(slots - 1, Math.max(0, slot))
  }
  return { from, to, bucketMs, slots, slotOf }
}

/**
 * A row's buckets laid on the grid: one cell per slot, null where nothing was reported (a later
 * bucket wins a shared slot; one whose time is not a time is left out).
 */
export function cellsOf(/** @type {TimelineBucket[]} */ buckets, /** @type {ReturnType<typeof timelineGrid>} */ grid) {
  /** @type {(TimelineBucket | null)[]} */
  const cells = new Array(grid.slots).fill(null)
  for (const bucket of buckets) {
    const slot = grid.slotOf(bucket.at)
    if (slot !== null) cells[slot] = bucket
  }
  return cells
}

/** "on 2 of 3 nodes", "on all 3 nodes", "on the only node reporting": how many nodes saw a bucket's state. */
export function nodesText(/** @type {Pick<TimelineBucket, 'share' | 'nodes'>} */ bucket) {
  if (bucket.share < 1) return `on ${Math.round(bucket.share * bucket.nodes)} of ${bucket.nodes} nodes`
  return `on ${bucket.nodes === 1 ? 'the only node reporting' : `all ${bucket.nodes} nodes`}`
}

/** A dot's title: when, the worst state and on how many nodes, held or not, and its failures. */
export function dotTitle(/** @type {TimelineBucket} */ bucket) {
  return `${stamp(bucket.at)}: ${stateLabel(bucket.state)} at worst, ${nodesText(bucket)}${bucket.held ? ', held' : ''}; ${failuresText(bucket)}`
}

/** How tall a dot's fill is (percent): its share of the nodes, never so small it cannot be seen. */
export const fillPercent = (/** @type {number} */ share) => Math.max(15, Math.round(share * 100))

/**
 * Where an incident's bar sits in the lane, in percent of the window: clipped to the window,
 * an open incident running to its end, and never narrower than 0.4 % (a blip stays clickable).
 */
export function laneBar(/** @type {Pick<LaneIncident, 'opened_at' | 'closed_at'>} */ incident, /** @type {number} */ from, /** @type {number} */ to) {
  const span = to - from
  if (!(span > 0)) return { left: 0, width: 100 }
  const start = Math.min(to, Math.max(from, Date.parse(incident.opened_at)))
  const end = incident.closed_at === null ? to : Math.max(start, Math.min(to, Date.parse(incident.closed_at)))
  return { left: ((start - from) / span) * 100, width: Math.max(0.4, ((end - start) / span) * 100) }
}
