/**
 * Trials of failed routes, one per due time across the whole fleet (issue 35, item 8). A failed
 * route comes back only when a request sent to it is served; the fleet shares one round per route
 * (due time, rung) and one slot per round. A node whose route fails joins the failing round or
 * opens one; when due, the first request that could use it claims the slot by gossip and, after
 * TRIAL_CLAIM_SETTLE_MS with no rival claim won (lowest node id), the node's next such request is
 * the trial. A failed trial opens the next rung; a served one recovers the route on every node.
 * Claims by gossip, not a lease: no round trip on the request path, and a node alone still
 * recovers on its own. Pure: the gateway carries `changes()` to the fleet and peers' rounds to `merge`.
 */
import { compareVersions, createClock, type Version } from '../holds/clock.ts'
import { routeKey, type RouteRef } from '../adaptive/types.ts'
import { compareTrialEntries, type TrialClaim, type TrialEntry } from './entry.ts'
import { TRIAL_CLAIM_LAPSE_MS, TRIAL_CLAIM_SETTLE_MS, TRIAL_ENTRY_LIFETIME_MS, TRIAL_SLOT_TIMEOUT_MS, TRIAL_STALE_MS, TRIAL_TOP_RUNG, trialWaitMs } from './timing.ts'

/** What `createTrials` needs: who this node is, and where. */
export interface TrialsInit {
  nodeId: string
  /** This node's region (default `default`): failing rounds opened in it are shared failures. */
  region?: string
}

/** How an answer from a failed route went, as far as its trial is concerned. */
export type TrialAnswer =
  /** Served: the route works again. */
  | 'served'
  /** A failure that counts against the key (transient, timeout, ...): still down. */
  | 'failed'
  /** Says nothing about the route (the caller's fault, a cancel, never sent): the slot is free again. */
  | 'inconclusive'

/** What a merge of peers' rounds did here. */
export interface TrialMerge {
  /** Rounds that replaced this node's: a served one recovers the route where it failed before it. */
  changed: TrialEntry[]
  /** This node's rounds newer than what a peer sent: send them back, the peer is behind. */
  newer: TrialEntry[]
}

/** One node's view of the fleet's trial rounds, and its own claims. */
export type Trials = ReturnType<typeof createTrials>

/** True while a claim holds its round's slot: not yet lapsed unsent, or sent and not timed out. */
export function claimLive(claim: TrialClaim | null, now: number): boolean {
  if (claim === null) return false
  if (claim.startedAt === null) return now - claim.at < TRIAL_CLAIM_LAPSE_MS
  return now - claim.startedAt < TRIAL_SLOT_TIMEOUT_MS
}

/** Creates the trial rounds of node `init.nodeId`, empty. */
export function createTrials(init: TrialsInit) {
  const nodeId = init.nodeId
  const region = init.region ?? 'default'
  const clock = createClock(nodeId)
  const rounds = new Map<string, TrialEntry>()
  const pending = new Map<string, TrialEntry>()
  /** The trials this node sent, to recognise their answers. */
  const sent = new Map<string, { round: Version; generation: number; startedAt: number }>()
  let peers = 0

  const put = (key: string, entry: TrialEntry) => {
    rounds.set(key, entry)
    pending.set(key, entry)
  }

  const open = (route: RouteRef, state: TrialEntry['state'], rung: number, dueAt: number, now: number) => {
    const key = routeKey(route.provider, route.model, route.keyId)
    put(key, { provider: route.provider, model: route.model, keyId: route.keyId, round: clock.tick(now), state, rung, dueAt, claim: null, region })
    sent.delete(key)
  }

  const stale = (entry: TrialEntry, now: number) => now - entry.dueAt > TRIAL_STALE_MS && !claimLive(entry.claim, now)

  return {
    nodeId,
    region,
    /** How many peers this node hears; with none it claims and sends at once. */
    setPeers(count: number): void {
      peers = Math.max(0, count)
    },
    /** The route failed here: join the fleet's failing round, or open one (first trial due TRIAL_FIRST_WAIT_MS later). */
    routeFailed(route: RouteRef, now: number): void {
      const current = rounds.get(routeKey(route.provider, route.model, route.keyId))
      if (current !== undefined && current.state === 'failing' && !stale(current, now)) return
      open(route, 'failing', 0, now + trialWaitMs(0), now)
    },
    /** True when this request is the route's trial: its round is due and this node holds the settled, winning claim. */
    take(route: RouteRef, now: number): boolean {
      const key = routeKey(route.provider, route.model, route.keyId)
      const entry = rounds.get(key)
      if (entry === undefined || entry.state !== 'failing' || now < entry.dueAt) return false
      const settle = peers > 0 ? TRIAL_CLAIM_SETTLE_MS : 0
      const claim = entry.claim
      if (claim !== null && claimLive(claim, now)) {
        // Someone's claim holds the slot: it is this request's only if it is ours, settled, and not yet sent.
        if (claim.nodeId !== nodeId || claim.startedAt !== null || now < claim.at + settle) return false
        put(key, { ...entry, claim: { ...claim, startedAt: now } })
        sent.set(key, { round: entry.round, generation: claim.generation, startedAt: now })
        return true
      }
      const generation = (claim?.generation ?? 0) + 1
      const alone = settle === 0
      put(key, { ...entry, claim: { nodeId, generation, at: now, startedAt: alone ? now : null } })
      if (!alone) return false
      sent.set(key, { round: entry.round, generation, startedAt: now })
      return true
    },
    /** An answer from a route failed here: served opens a served round; failed or inconclusive counts only for this node's own trial. */
    answered(route: RouteRef, startedAt: number, answer: TrialAnswer, now: number): void {
      const key = routeKey(route.provider, route.model, route.keyId)
      const current = rounds.get(key)
      if (answer === 'served') {
        // Already known served since this attempt started: nothing new to tell.
        if (current !== undefined && current.state === 'served' && current.dueAt >= startedAt) return
        open(route, 'served', 0, now, now)
        return
      }
      const mine = sent.get(key)
      if (mine === undefined || startedAt < mine.startedAt) return
      sent.delete(key)
      // The round moved on meanwhile (another node's answer came first): this answer is old news.
      if (current === undefined || current.state !== 'failing' || compareVersions(current.round, mine.round) !== 0) return
      if (current.claim === null || current.claim.nodeId !== nodeId || current.claim.generation !== mine.generation) return
      // A failed trial climbs a rung; one that said nothing about the route opens a round on the same rung, due at once.
      const rung = answer === 'failed' ? Math.min(current.rung + 1, TRIAL_TOP_RUNG) : current.rung
      open(route, 'failing', rung, answer === 'failed' ? now + trialWaitMs(rung) : now, now)
    },
    /** Rounds from a peer (or a joining pull), already checked; see TrialMerge. */
    merge(entries: readonly TrialEntry[], now: number): TrialMerge {
      const changed: TrialEntry[] = []
      const newer: TrialEntry[] = []
      for (const entry of entries) {
        clock.observe(entry.round, now)
        const key = routeKey(entry.provider, entry.model, entry.keyId)
        const local = rounds.get(key)
        const order = local === undefined ? 1 : compareTrialEntries(entry, local)
        if (order > 0) {
          rounds.set(key, entry)
          // A change of ours the peer's round replaced need not go out any more.
          pending.delete(key)
          changed.push(entry)
        } else if (order < 0 && compareVersions(local!.round, entry.round) > 0) {
          newer.push(local!)
        }
      }
      return { changed, newer }
    },
    /** The rounds this node changed since the last call, for the fleet. */
    changes(): TrialEntry[] {
      if (pending.size === 0) return []
      const out = [...pending.values()]
      pending.clear()
      return out
    },
    /** The current round of a route. */
    entry: (route: RouteRef): TrialEntry | undefined => rounds.get(routeKey(route.provider, route.model, route.keyId)),
    /** Every round known. */
    entries: (): TrialEntry[] => [...rounds.values()],
    /** Forgets rounds nobody changed for TRIAL_ENTRY_LIFETIME_MS. */
    collect(now: number): void {
      for (const [key, entry] of rounds) {
        const touched = Math.max(entry.dueAt, entry.round.wallMs, entry.claim?.startedAt ?? entry.claim?.at ?? 0)
        if (now - touched >= TRIAL_ENTRY_LIFETIME_MS && !claimLive(entry.claim, now)) {
          rounds.delete(key)
          sent.delete(key)
        }
      }
    },
  }
}
