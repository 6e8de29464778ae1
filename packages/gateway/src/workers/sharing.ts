/**
 * One state for the node across its workers (issue 38): what a worker changes is told to its
 * siblings, which take it in through the doors the fleet's news uses; the fleet worker also
 * carries it to the fleet. Per-request news (sessions, finished attempts) travels batched.
 */
import type { Logger } from 'pino'
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client'
import type { AdaptiveBalancer, HoldEntry, Holds, RateLimitBackoff, SessionAffinity, SessionRoute, TrialEntry } from '@switchboard/routing'
import type { KeyLimiter, LimitedKey, LimitRefusal } from '../access/limits.ts'
import type { GatewayKeyLoader } from '../access/key-loading.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { Dispatcher } from '../dispatch/dispatcher.ts'
import type { Fleet } from '../fleet/fleet.ts'
import type { ClusterView } from '../fleet/view.ts'
import type { ConfigChange } from '../fleet/messages.ts'
import type { SettingsOwner } from '../settings/settings.ts'
import type { HistoryForward, News, NodeState, SessionAsked, SessionNews } from './protocol.ts'
import type { Siblings } from './siblings.ts'

/** What the request path asks of a gateway key's limits: the node's one count, wherever it is kept. */
export type CallerLimiter = Pick<KeyLimiter, 'admit' | 'recordTokens'>

/** A session remembered again on the same route is told again at most this often (its idle clock, elsewhere). */
const SESSION_RETELL_MS = 30_000
const MAX_TOLD_SESSIONS = 100_000

/** The dispatcher's session memory, shared: what it remembers is told to the siblings, and a session it does not know is asked of the primary. */
export interface SharedSessions extends SessionAffinity {
  /**
   * Null when this worker knows the session's route; else a promise settled once the primary answered and its route, if any, is
   * remembered here. The worker that served the session's last request told the primary before it wrote the answer, and the
   * primary reads that news before this question (which the next request caused), so a caller that waits for each answer keeps its key.
   */
  learn(sessionId: string, model: string, now: number): Promise<void> | null
}

/** The dispatcher's session memory: what it remembers is told to the siblings, so a session keeps its key on any worker. */
export function sharedSessions(local: SessionAffinity, siblings: Pick<Siblings, 'session' | 'ask'>): SharedSessions {
  const told = new Map<string, { provider: string; keyId: string; at: number }>()
  const note = (id: string, route: SessionRoute, at: number) => {
    told.delete(id)
    told.set(id, { provider: route.provider, keyId: route.keyId, at })
    if (told.size > MAX_TOLD_SESSIONS) told.delete(told.keys().next().value!)
  }
  return {
    recall: (sessionId, model, now) => local.recall(sessionId, model, now),
    remember(sessionId, model, route, now, ttlMs) {
      local.remember(sessionId, model, route, now, ttlMs)
      const id = `${sessionId}\u0000${model}`
      const last = told.get(id)
      if (last !== undefined && last.provider === route.provider && last.keyId === route.keyId && now - last.at < SESSION_RETELL_MS) return
      note(id, route, now)
      // A new or moved session is told at once, before its answer is written (learn counts on it); a refresh waits for the batch.
      const moved = last === undefined || last.provider !== route.provider || last.keyId !== route.keyId
      siblings.session({ sessionId, model, route: { provider: route.provider, keyId: route.keyId }, at: now, ...(ttlMs !== undefined ? { ttlMs } : {}) }, moved)
    },
    learn(sessionId, model, now) {
      if (local.recall(sessionId, model, now) !== undefined) return null
      return siblings.ask('session', { sessionId, model } satisfies SessionAsked).then((answer) => {
        const known = answer as SessionNews | null
        // Served here meanwhile (a request of the same session): that route is the newer.
        if (known === null || local.recall(sessionId, model, now) !== undefined) return
        local.remember(sessionId, model, known.route, known.at, known.ttlMs)
        // The node has this news: serving the session here tells it again only as a refresh.
        note(`${sessionId}\u0000${model}`, known.route, known.at)
      }, () => {})
    },
  }
}

/** The dispatcher's balancer: each finished attempt is observed by the siblings too. */
export function sharedOutcomes(balancer: AdaptiveBalancer, siblings: Siblings): AdaptiveBalancer {
  return { ...balancer, attemptFinished: both(balancer.attemptFinished, siblings.outcome) }
}

/** The limits of a worker that is not the fleet worker: the fleet worker keeps the node's count; alone, this worker's own. */
export function remoteLimiter(local: KeyLimiter, siblings: Siblings): CallerLimiter {
  const limits = (key: LimitedKey) => ({ id: key.id, name: key.name, requestsPerMinute: key.requestsPerMinute, tokensPerMinute: key.tokensPerMinute })
  return {
    admit(key) {
      if (key.requestsPerMinute === null && key.tokensPerMinute === null) return null
      return siblings.ask('admit', limits(key)).then(
        (refusal) => refusal as LimitRefusal | null,
        () => local.admit(key),
      )
    },
    recordTokens(key, tokens) {
      if (key.tokensPerMinute === null || !(tokens > 0)) return
      siblings.ask('tokens', { key: limits(key), tokens }).catch(() => local.recordTokens(key, tokens))
    },
  }
}

/** What this worker answers: its metrics; on the fleet worker, the fleet's view, a gateway key's count, the keys a peer shared. */
export function answerSiblings(siblings: Siblings, node: { metrics: Metrics; fleet: Fleet; limiter: KeyLimiter; keys: GatewayKeyLoader }): void {
  // Every worker's metrics, added up: a scrape sees the node whichever worker answers it.
  node.metrics.render = () => aggregatedMetrics(siblings, node.metrics.registry)
  siblings.answer(async (question, payload) => {
    if (question === 'metrics') return node.metrics.registry.getMetricsAsJSON()
    if (!siblings.fleetWorker) throw new Error(`worker ${siblings.index} is not the fleet worker`)
    if (question === 'view') return node.fleet.view()
    if (question === 'admit') return node.limiter.admit(payload as LimitedKey)
    if (question === 'gateway_keys') return node.keys.shared()
    const usage = payload as { key: LimitedKey; tokens: number }
    node.limiter.recordTokens(usage.key, usage.tokens)
    return null
  })
}

/** The fleet as another worker sees it: the fleet worker carries its news and is asked for the view and shared keys. */
export function siblingFleet(siblings: Siblings, own: { view(): Promise<ClusterView>; keys: GatewayKeyLoader }): Fleet {
  return {
    publishHolds() {},
    publishRateLimit() {},
    publishTrials() {},
    publishConfig() {},
    async pullGatewayKeys() {
      const shared = (await siblings.ask('gateway_keys', null).catch(() => null)) as ReturnType<GatewayKeyLoader['shared']>
      return shared !== null && own.keys.fromPeer(shared.keys, `worker ${siblings.index}`, { storeFailed: true })
    },
    view: () => siblings.ask('view', null).then((view) => view as ClusterView, own.view),
    clusterStats: () => null,
    async stop() {},
  }
}

/** Resolves once the fleet worker answers (the primary relays a question only once it is up), or after a minute. */
export async function fleetWorkerUp(siblings: Siblings, logger: Pick<Logger, 'warn'>): Promise<void> {
  for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (await siblings.ask('view', null).then(() => true, () => false)) return
  }
  logger.warn('the fleet worker did not come up within 60 s: this worker listens anyway')
}

/** Calls `first`, then `then`, with the same arguments: a door that also tells someone else. */
export function both<Args extends unknown[]>(first: (...args: Args) => void, then: (...args: Args) => void): (...args: Args) => void {
  return (...args) => {
    first(...args)
    then(...args)
  }
}

/** What tells the siblings of holds, backoffs and trial rounds. */
function toSiblings(siblings: Siblings) {
  return {
    holds: (entries: readonly HoldEntry[]) => siblings.tell({ kind: 'holds', entries: [...entries] }),
    backoff: (backoff: RateLimitBackoff) => siblings.tell({ kind: 'backoff', backoff }),
    trials: (entries: readonly TrialEntry[]) => siblings.tell({ kind: 'trials', entries: [...entries] }),
  }
}

/** The fleet as the dispatcher and the API publish to it: the fleet (or its stand-in) and the siblings. */
export function alsoToSiblings(fleet: Fleet, siblings: Siblings): Fleet {
  const tell = toSiblings(siblings)
  return {
    ...fleet,
    publishHolds: both(fleet.publishHolds, tell.holds),
    publishRateLimit: both(fleet.publishRateLimit, tell.backoff),
    publishTrials: both(fleet.publishTrials, tell.trials),
    // Settings travel as their own news (settings.onChange), once.
    publishConfig: both(fleet.publishConfig, (change) => {
      if (change.kind !== 'settings') siblings.tell({ kind: 'config', change })
    }),
  }
}

/** The dispatcher the fleet merges into, on the fleet worker: what peers send reaches the siblings too. */
export function mergesToSiblings(dispatcher: Dispatcher, siblings: Siblings): Dispatcher {
  const tell = toSiblings(siblings)
  return { ...dispatcher, merged: both(dispatcher.merged, tell.holds), backOff: both(dispatcher.backOff, tell.backoff), mergeTrials: both(dispatcher.mergeTrials, tell.trials) }
}

export interface NewsTakers {
  holds: Holds
  /** The dispatcher itself, not history's observer: a sibling's hold was recorded where it was placed. */
  dispatcher: Dispatcher
  balancer: AdaptiveBalancer
  /** The session memory itself (not the shared one: no news goes back). */
  sessions: SessionAffinity
  settings: SettingsOwner
  /** The fleet itself (not `alsoToSiblings`): the fleet worker carries a sibling's news to the peers. */
  fleet: () => Fleet | undefined
  /** A provider, key or gateway key changed on a sibling (or a peer the fleet worker heard). */
  configChanged(change: ConfigChange): void
  /** The fleet worker's history: a sibling's events. */
  history?(events: readonly HistoryForward[]): void
  now: () => number
}

/** Takes in what a sibling changed. */
export function takeNews(takers: NewsTakers, news: News): void {
  const { dispatcher, now } = takers
  switch (news.kind) {
    case 'holds': {
      const changed = takers.holds.merge(news.entries, now())
      if (changed.length === 0) return
      dispatcher.merged(changed)
      takers.fleet()?.publishHolds(changed)
      return
    }
    case 'backoff':
      dispatcher.backOff(news.backoff)
      takers.fleet()?.publishRateLimit(news.backoff)
      return
    case 'trials':
      dispatcher.mergeTrials(news.entries)
      takers.fleet()?.publishTrials(news.entries)
      return
    case 'settings':
      takers.settings.set(news.settings, 'worker')
      return
    case 'config':
      takers.configChanged(news.change)
      takers.fleet()?.publishConfig(news.change)
      return
    case 'sessions':
      for (const session of news.sessions) takers.sessions.remember(session.sessionId, session.model, session.route, session.at, session.ttlMs)
      return
    case 'outcomes':
      for (const outcome of news.outcomes) takers.balancer.attemptObserved(outcome)
      return
    case 'history':
      takers.history?.(news.events)
      return
  }
}

/** Takes in the node's state at a worker's start (a restarted worker loses no hold). */
export function takeState(takers: NewsTakers, state: NodeState): void {
  if (state.holds.length > 0) takeNews(takers, { kind: 'holds', entries: state.holds })
  for (const backoff of state.backoffs) takers.dispatcher.backOff(backoff)
  if (state.trials.length > 0) takers.dispatcher.mergeTrials(state.trials)
  if (state.sessions.length > 0) takeNews(takers, { kind: 'sessions', sessions: state.sessions })
  if (state.settings !== null) takers.settings.set(state.settings, 'worker')
}

/** The node's metrics: each worker's, added up (gauges of the node's one state, such as holds in force, take the highest). */
async function aggregatedMetrics(siblings: Siblings, own: Registry): Promise<string> {
  try {
    const shares = (await siblings.ask('metrics', null)) as MetricObjectWithValues<MetricValue<string>>[][]
    if (shares.length > 0) return await AggregatorRegistry.aggregate(shares).metrics()
  } catch {
    // The primary did not answer: this worker's own.
  }
  return own.metrics()
}
