/**
 * Incidents kept grouped between queries, so a query groups only the open tail. Episodes
 * that closed before a horizon are "sealed": grouped once, per slice of time they closed in,
 * and regrouped only where a slice changed (a late write, a node's restart closing its old
 * episodes, retention). A query then groups the episodes still open or closed since the
 * horizon together with just the sealed incidents they can join.
 *
 * Exact, not approximate: every link the grouping makes (same entity, or a route inside its
 * key's or direction's problem) joins two episodes of one provider whose times meet within
 * the join gap. A sealed incident no new episode can reach that way is an incident of the
 * full grouping as it stands; the rest is regrouped from its episodes. The sealed incidents
 * are closed, so nothing in them depends on `now` or on which nodes are alive. Pure.
 */
import { groupIncidents, JOIN_GAP_MS, pushTo, type GroupOptions, type GroupedIncident, type NodeLiveness, type StoredEpisode } from './group.ts'

/** Per slice (closed-at / `SLICE_MS`): a fingerprint of the slice's sealed rows, as Postgres computes it. */
export type SliceFingerprints = ReadonlyMap<number, string>

/** Sealed episodes are fingerprinted and reloaded by the hour they closed in. */
export const SLICE_MS = 3_600_000

/** One sealed incident, with what finding its neighbours needs. */
interface SealedComponent {
  grouped: GroupedIncident
  /** The slices its episodes closed in. */
  slices: Set<number>
  /** Earliest opening and latest closing of its episodes. */
  from: number
  to: number
}

/** The grouped sealed episodes, and the slice fingerprints they reflect. */
export interface SealedIncidents {
  readonly slices: SliceFingerprints
  readonly components: readonly SealedComponent[]
  /** Components by provider (links never cross providers). */
  readonly byProvider: ReadonlyMap<string, readonly SealedComponent[]>
}

/** Nothing sealed yet. */
export function emptySealed(): SealedIncidents {
  return { slices: new Map(), components: [], byProvider: new Map() }
}

/** The slice an episode closed in (ms since 1970 / SLICE_MS). */
export const sliceOf = (closedAt: number): number => Math.floor(closedAt / SLICE_MS)

/** Slices whose fingerprint differs between what is grouped and what Postgres has. */
export function changedSlices(have: SliceFingerprints, want: SliceFingerprints): number[] {
  const changed = new Set<number>()
  for (const [slice, print] of want) if (have.get(slice) !== print) changed.add(slice)
  for (const slice of have.keys()) if (!want.has(slice)) changed.add(slice)
  return [...changed].sort((a, b) => a - b)
}

/**
 * The sealed incidents after `changed` slices were reloaded: `fresh` holds every sealed
 * episode of those slices now (none for a slice that is gone) and their fingerprints.
 */
export function reseal(previous: SealedIncidents, changed: readonly number[], fresh: { slices: SliceFingerprints; episodes: readonly StoredEpisode[] }): SealedIncidents {
  const dropped = new Set(changed)
  const affected = new Set(previous.components.filter((component) => [...component.slices].some((slice) => dropped.has(slice))))
  // What stays of an affected incident: its episodes of unchanged slices (they link only among themselves and to what is new).
  const kept = [...affected].flatMap((component) => component.grouped.episodes.filter((episode) => !dropped.has(sliceOf(episode.closedAt!))))
  const rest = previous.components.filter((component) => !affected.has(component))
  const restByProvider = indexByProvider(rest)
  const joined = neighbours(restByProvider, fresh.episodes)
  const regroup = [...kept, ...fresh.episodes, ...[...joined].flatMap((component) => component.grouped.episodes)]
  // Closed episodes only: liveness and `now` play no part.
  const regrouped = groupIncidents(regroup, new Map(), { now: 0 }).map(sealedComponent)
  const components = [...rest.filter((component) => !joined.has(component)), ...regrouped]
  const slices = new Map([...previous.slices].filter(([slice]) => !dropped.has(slice)))
  for (const [slice, print] of fresh.slices) slices.set(slice, print)
  return { slices, components, byProvider: indexByProvider(components) }
}

/** Every incident: the sealed ones the open tail cannot reach as they are, the rest grouped with the tail. */
export function groupWithSealed(sealed: SealedIncidents, tail: readonly StoredEpisode[], nodes: ReadonlyMap<string, NodeLiveness>, options: GroupOptions): GroupedIncident[] {
  const joined = neighbours(sealed.byProvider, tail)
  const untouched = sealed.components.filter((component) => !joined.has(component)).map((component) => component.grouped)
  return [...untouched, ...groupIncidents([...tail, ...[...joined].flatMap((component) => component.grouped.episodes)], nodes, options)]
}

/**
 * Sealed incidents an episode of `episodes` may link to: same provider, and the incident's
 * span and the episode's (open: unbounded) within the join gap. A superset of the grouping's
 * own links, which is all exactness needs.
 */
function neighbours(byProvider: ReadonlyMap<string, readonly SealedComponent[]>, episodes: readonly StoredEpisode[]): Set<SealedComponent> {
  const found = new Set<SealedComponent>()
  for (const episode of episodes) {
    const end = episode.closedAt ?? Infinity
    for (const component of byProvider.get(episode.provider) ?? []) {
      if (component.from <= end + JOIN_GAP_MS && episode.openedAt <= component.to + JOIN_GAP_MS) found.add(component)
    }
  }
  return found
}

/** A sealed incident's component: every episode of it is closed, so the incident opens at the first opening and closes at the last closing. */
function sealedComponent(grouped: GroupedIncident): SealedComponent {
  return { grouped, slices: new Set(grouped.episodes.map((episode) => sliceOf(episode.closedAt!))), from: grouped.openedMs, to: grouped.closedMs! }
}

function indexByProvider(components: readonly SealedComponent[]): Map<string, SealedComponent[]> {
  const index = new Map<string, SealedComponent[]>()
  for (const component of components) pushTo(index, component.grouped.incident.provider, component)
  return index
}
