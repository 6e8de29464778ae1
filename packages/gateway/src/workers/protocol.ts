/**
 * What a node's workers (issue 38) and their primary say over node:cluster's IPC channel: news
 * for the siblings, the node's state for a worker that starts later, and questions only the
 * fleet worker can answer, asked through the primary.
 */
import type { AttemptOutcome, HoldEntry, LoadBalancerSettings, RateLimitBackoff, SessionRoute, TrialEntry } from '@switchboard/routing'
import type { ConfigChange } from '../fleet/messages.ts'

/** A session's route, as one worker remembered it. */
export interface SessionNews {
  sessionId: string
  model: string
  route: SessionRoute
  at: number
  ttlMs?: number
}

/** A state change one worker made, for every other worker of the node. */
export type News =
  | { kind: 'holds'; entries: HoldEntry[] }
  | { kind: 'backoff'; backoff: RateLimitBackoff }
  | { kind: 'trials'; entries: TrialEntry[] }
  | { kind: 'settings'; settings: LoadBalancerSettings }
  | { kind: 'config'; change: ConfigChange }
  | { kind: 'sessions'; sessions: SessionNews[] }
  /** Finished attempts, batched: the 5-second weights of every worker see the node's whole traffic. */
  | { kind: 'outcomes'; outcomes: AttemptOutcome[] }
  /** History's events of a worker that does not write history (only the fleet worker does). */
  | { kind: 'history'; events: HistoryForward[] }

/** One history event, forwarded whole: the fleet worker's recorder writes it. */
export type HistoryForward = { type: 'record'; event: unknown } | { type: 'request'; outcome: unknown } | { type: 'holds'; entries: unknown[] }

/** Questions the fleet worker answers; `metrics` the primary asks of every worker and hands back together; `state` (a NodeState) and `session` (a SessionAsked's SessionNews or null) the primary answers. */
export type Question = 'view' | 'admit' | 'gateway_keys' | 'tokens' | 'metrics' | 'state' | 'session'

/** A session a worker does not know, asked of the primary before its request is routed. */
export type SessionAsked = Pick<SessionNews, 'sessionId' | 'model'>

/** What the primary hands a worker that starts: the node's state so far. */
export interface NodeState {
  holds: HoldEntry[]
  backoffs: RateLimitBackoff[]
  trials: TrialEntry[]
  sessions: SessionNews[]
  settings: LoadBalancerSettings | null
}

/** Every message on the channel; `sb` tells ours from node:cluster's own. */
export type WorkerMessage =
  | { sb: 'news'; news: News }
  | { sb: 'ask'; id: number; question: Question; payload: unknown }
  | { sb: 'reply'; id: number; ok: true; value: unknown }
  | { sb: 'reply'; id: number; ok: false; error: string }
  | { sb: 'ready'; url: string }

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  return typeof value === 'object' && value !== null && typeof (value as { sb?: unknown }).sb === 'string'
}

/** The worker that joins the fleet, writes history and answers questions: the first. */
export const FLEET_WORKER = 1
