/**
 * The incidents of a node's history queries. What a node answers is a function of the rows in
 * Postgres alone (what is kept here is only ever a grouping of rows Postgres still has), so
 * every node answers the same.
 */
import type pg from 'pg'
import { groupIncidents, type GroupOptions, type GroupedIncident } from '../incidents/group.ts'
import { changedSlices, emptySealed, groupWithSealed, reseal, type SealedIncidents } from '../incidents/sealed.ts'
import { loadAllEpisodes, loadNodes, loadSealedSlices, loadTail } from './read.ts'

/** Episodes that closed this long ago or more are sealed (writers flush within seconds). */
const SETTLE_MS = 120_000
/** The horizon moves in steps of this. */
const STEP_MS = 60_000

/** How many times a query rereads when writes keep landing between its reads, before it groups everything. */
const ATTEMPTS = 3

/** One node's incidents, as `groupIncidents` of every node's episodes would answer: sealed ones kept between queries (incidents/sealed.ts), each query checked against Postgres and grouping only the open tail. */
export function createIncidentSource(pool: pg.Pool) {
  let sealed: SealedIncidents = emptySealed()
  let resealing: Promise<void> | null = null
  const counters = { reloadedSlices: 0, fallbacks: 0 }

  const full = async (options: GroupOptions): Promise<GroupedIncident[]> => {
    const [episodes, nodes] = await Promise.all([loadAllEpisodes(pool), loadNodes(pool)])
    return groupIncidents(episodes, nodes, options)
  }

  /** Reloads the changed slices; one at a time (concurrent queries wait for it, then check again). */
  const update = (horizon: number, changed: readonly number[]) =>
    (resealing ??= loadSealedSlices(pool, horizon, changed)
      .then((fresh) => {
        sealed = reseal(sealed, changed, fresh)
        counters.reloadedSlices += changed.length
      })
      .finally(() => (resealing = null)))

  return {
    /** Groups every episode afresh (the reference the kept path answers the same as). */
    full,
    /** Slices reloaded and regrouped so far, and queries that gave up on the kept incidents and grouped everything. */
    stats: () => ({ ...counters }),
    async grouped(options: GroupOptions): Promise<GroupedIncident[]> {
      const horizon = Math.floor((options.now - SETTLE_MS) / STEP_MS) * STEP_MS
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const [{ slices, tail }, nodes] = await Promise.all([loadTail(pool, horizon), loadNodes(pool)])
        const changed = changedSlices(sealed.slices, slices)
        if (changed.length > 0) await update(horizon, changed)
        // The tail goes with the fingerprints read in its statement: usable once what is kept matches them.
        if (changedSlices(sealed.slices, slices).length === 0) return groupWithSealed(sealed, tail, nodes, options)
      }
      counters.fallbacks++
      return full(options)
    },
  }
}
