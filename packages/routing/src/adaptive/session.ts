/**
 * Session affinity: a session stays on the provider and key that served it last while the balancer
 * offers them and the key is not held (reference, "Scope & Limitations"). Pure: time is passed in.
 */
import { withDirections, type DirectionDecision } from './directions.ts'
import { sameDirection, type RouteRef, type Direction } from './types.ts'

/** Where a session was served last. */
export type SessionRoute = Pick<RouteRef, 'provider' | 'keyId'>

/** What the sessions are bounded by. */
export interface SessionAffinityInit {
  /** The most sessions remembered; the least recently used is forgotten first. */
  capacity: number
  /** A session not seen for this long is forgotten. */
  idleMs: number
}

/** A bounded, least-recently-used memory of sessions' last routes, per session and model. */
export type SessionAffinity = ReturnType<typeof createSessionAffinity>

/** How stale a session's place in the eviction order may get (and at most 1% of its idle limit). */
const LRU_TOUCH_MS = 1_000

/** Creates the session memory of one node. */
export function createSessionAffinity(init: SessionAffinityInit) {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  const entries = new Map<string, { route: SessionRoute; seenAt: number; idleMs: number }>()
  // Per model, since a session's prompt cache belongs to one model (agents switch models mid-session).
  const id = (sessionId: string, model: string) => `${sessionId}\u0000${model}`
  return {
    /** The session's last route for the model, if remembered and not idle for too long. */
    recall(sessionId: string, model: string, now: number): SessionRoute | undefined {
      const key = id(sessionId, model)
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      if (now - entry.seenAt > entry.idleMs) {
        entries.delete(key)
        return undefined
      }
      // Moved to the most recent end at most once a second: a busy session does not re-insert on every request.
      if (now - entry.seenAt >= Math.min(LRU_TOUCH_MS, entry.idleMs / 100)) {
        entries.delete(key)
        entries.set(key, entry)
      }
      entry.seenAt = now
      return entry.route
    },
    /** Remembers the route that served the session's request for the model; `ttlMs` overrides the idle limit for this session. */
    remember(sessionId: string, model: string, route: SessionRoute, now: number, ttlMs?: number): void {
      const key = id(sessionId, model)
      entries.delete(key)
      entries.set(key, { route: { provider: route.provider, keyId: route.keyId }, seenAt: now, idleMs: ttlMs ?? init.idleMs })
      while (entries.size > Math.max(0, init.capacity)) entries.delete(entries.keys().next().value!)
    },
  }
}

/**
 * Session headers, strongest first: our own, then what coding agents send (Claude Code, Codex CLI,
 * OpenCode), then older Codex builds' `conversation_id`, then Codex's `thread-id` (a sub-agent's
 * thread: `session-id` wins, so the whole session stays on one key's prompt cache).
 */
export const SESSION_HEADERS = ['x-bf-session-id', 'x-claude-code-session-id', 'session-id', 'session_id', 'x-session-affinity', 'x-session-id', 'conversation_id', 'thread-id'] as const

/** The longest `x-bf-session-ttl` honoured: one day. */
export const MAX_SESSION_TTL_MS = 24 * 60 * 60_000

/** What a request says about its session. */
export interface SessionRequest {
  /** Null when the request has no session or turned affinity off (`x-bf-session-affinity: off`). */
  sessionId: string | null
  /** `x-bf-session-ttl` in ms (seconds on the wire, capped at a day); null for the default. */
  ttlMs: number | null
}

/** Reads the session headers of a request (names lower-cased, as Node gives them). */
export function readSessionHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): SessionRequest {
  if (headers['x-bf-session-affinity'] === 'off') return { sessionId: null, ttlMs: null }
  const sessionId = SESSION_HEADERS.map((name) => headers[name]).find((value): value is string => typeof value === 'string' && value !== '')
  if (sessionId === undefined) return { sessionId: null, ttlMs: null }
  const ttl = headers['x-bf-session-ttl']
  const seconds = typeof ttl === 'string' && /^\d+$/.test(ttl) ? Number(ttl) : NaN
  return { sessionId, ttlMs: seconds > 0 ? Math.min(seconds * 1000, MAX_SESSION_TTL_MS) : null }
}

/** What session affinity did to a decision. */
export type AffinityOutcome =
  /** No session route remembered. */
  | 'none'
  /** The session stays on its provider and key. */
  | 'kept'
  /** Its provider is not offered for this request any more (failed, or not eligible): picked anew. */
  | 'moved_not_offered'
  /** Its key is failed, held or gone: picked anew. */
  | 'moved_key_unavailable'

/** A provider decision after session affinity, and the key to prefer. */
export interface AffinityResult {
  decision: DirectionDecision
  /** The session's key, planned as the first key of its target (`PlannedTarget.firstKeyId`). */
  preferKeyId: string | undefined
  outcome: AffinityOutcome
}

/**
 * Keeps a session on its last provider and key when the decision still offers that provider and
 * `isOffered` says the key is neither failed nor held: its provider becomes the primary.
 */
export function applySessionAffinity(
  decision: DirectionDecision,
  last: SessionRoute | undefined,
  isOffered: (route: RouteRef) => boolean,
): AffinityResult {
  const primary = decision.primary
  if (last === undefined || primary === null) return { decision, preferKeyId: undefined, outcome: 'none' }
  const target: Direction = { provider: last.provider, model: primary.model }
  const position = sameDirection(primary, target) ? 0 : decision.fallbacks.findIndex((fallback) => sameDirection(fallback, target)) + 1
  if (position === 0 && !sameDirection(primary, target)) return { decision, preferKeyId: undefined, outcome: 'moved_not_offered' }
  if (!isOffered({ provider: last.provider, model: primary.model, keyId: last.keyId })) {
    return { decision, preferKeyId: undefined, outcome: 'moved_key_unavailable' }
  }
  if (position === 0) return { decision, preferKeyId: last.keyId, outcome: 'kept' }
  const fallbacks = [primary, ...decision.fallbacks.filter((_, index) => index !== position - 1)]
  return { decision: withDirections(decision, decision.fallbacks[position - 1]!, fallbacks), preferKeyId: last.keyId, outcome: 'kept' }
}
