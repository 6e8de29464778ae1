/**
 * The per-request record (issue 15): one plain object per inference request, whatever the
 * surface, handed to listeners (the request log writer, the per-minute request counts) after
 * the answer is sent, never on the request path. While nobody listens, nothing is tracked.
 *
 * The request path only fills a `RequestTrack` (a few assignments, the routing facts the
 * router leaves in the request's `RoutingLog`); the record is built from it when the response
 * closes. Shape: `RequestRecord` of @switchboard/history (design.md, "History, incidents,
 * request log").
 */
import type { ServerResponse } from 'node:http'
import { directionLog, isHoldReason } from '@switchboard/routing'
import type { RecordedAttempt, RecordedUsage, RequestRecord, RequestRecordListener, RequestSurface, RoutingSummary } from '@switchboard/history'
import type { GatewayError } from '../errors.ts'
import type { AttemptRecord, Served } from '../inference/engine.ts'
import { RoutingLog } from '@switchboard/routing'
import { scrubSecrets } from './scrub.ts'

/** Bodies kept with `request_log.content: true` are cut at this many characters each. */
export const MAX_CONTENT_CHARS = 32 * 1024

export interface RecorderComponents {
  now: () => number
  /** Key values to keep out of recorded messages and bodies (every configured key's value); read only when needed. */
  secrets: () => readonly string[]
  /** Whether request and response bodies are recorded (`request_log.content`). */
  recordContent: () => boolean
  /** A listener threw: reported, never passed to the request. */
  onListenerError?: (error: unknown) => void
}

export interface RecorderInit {
  nodeId: string
  region: string
}

/** Hands each request's record to its listeners. */
export interface RequestRecorder {
  /** True while anyone listens; the request path tracks nothing otherwise. */
  readonly active: boolean
  /** Adds a listener; returns its removal. */
  on(listener: RequestRecordListener): () => void
  /** Starts the record of one request; it is emitted once `outgoing` closes. */
  track(outgoing: ServerResponse, surface: RequestSurface, startedAt: number, id: string): RequestTrack
}

/** What the caller asked, as the surface parsed it. */
export interface AskedRequest {
  model: string
  fallbacks: readonly string[]
  stream: boolean
  sessionId: string | null
  /** The caller sent its own provider key (`x-bf-direct-key`): the caller picked the key. */
  directKey: boolean
  /** The body as received, kept only when content recording is on. */
  body?: string
}

/**
 * What one request did, filled in as it goes. Surfaces set `asked`, `log`, then call
 * `succeeded` or `failed`; streaming renderers call `chunk` per event sent.
 */
export class RequestTrack {
  asked: AskedRequest | null = null
  log: RoutingLog | null = null
  served: Served | null = null
  error: GatewayError | null = null
  /** The authenticated caller's gateway key name (issue 13), once the surface knows it. */
  gatewayKey: string | null = null
  /** Token counts a surface read itself (overrides what the record reads from the answer). */
  usage: RecordedUsage | null = null
  firstChunkAt = 0
  lastChunk: string | null = null
  streamError: string | null = null
  responseText: string | null = null
  constructor(
    readonly id: string,
    readonly surface: RequestSurface,
    readonly startedAt: number,
    /** Content recording was on when the request arrived. */
    readonly content: boolean,
    private readonly now: () => number,
  ) {}

  succeeded(served: Served): void {
    this.served = served
  }

  failed(error: GatewayError): void {
    this.error = error
  }

  /** A stream event went to the caller. */
  chunk(data: string): void {
    if (this.firstChunkAt === 0) this.firstChunkAt = this.now()
    this.lastChunk = data
    if (this.content) {
      const text = this.responseText ?? ''
      if (text.length < MAX_CONTENT_CHARS) this.responseText = text + data + '\n'
    }
  }

  /** The stream broke after it started. */
  broke(message: string): void {
    this.streamError = message
  }
}

/** Creates the recorder of one node. */
export function createRequestRecorder(components: RecorderComponents, init: RecorderInit): RequestRecorder {
  const listeners: RequestRecordListener[] = []
  const emit = (track: RequestTrack, finished: boolean) => {
    if (listeners.length === 0) return
    let record: RequestRecord
    try {
      record = buildRequestRecord(track, { nodeId: init.nodeId, region: init.region, endedAt: components.now(), finished, secrets: components.secrets })
    } catch (error) {
      components.onListenerError?.(error)
      return
    }
    for (const listener of listeners) {
      try {
        listener(record)
      } catch (error) {
        components.onListenerError?.(error)
      }
    }
  }
  return {
    get active() {
      return listeners.length > 0
    },
    on(listener) {
      listeners.push(listener)
      return () => {
        const index = listeners.indexOf(listener)
        if (index >= 0) listeners.splice(index, 1)
      }
    },
    track(outgoing, surface, startedAt, id) {
      const track = new RequestTrack(id, surface, startedAt, components.recordContent(), components.now)
      outgoing.once('close', () => emit(track, outgoing.writableFinished))
      return track
    },
  }
}

/** What the record needs besides the track. */
export interface RecordContext {
  nodeId: string
  region: string
  endedAt: number
  /** False when the response closed before it was finished (the caller went away). */
  finished: boolean
  /** Key values to keep out of messages and bodies; called only when there is text to clean. */
  secrets: () => readonly string[]
}

const CALLER_FAULT_CODES = new Set(['invalid_json', 'invalid_request', 'unknown_provider', 'model_not_served', 'request_too_large', 'unsupported_media_type', 'method_not_allowed', 'upstream_rejected_request'])
const CALLER_PICKED = new Set(['pinned', 'pinned_failed_kept', 'pinned_no_alternative'])

/** Builds the record of a finished request from its track. Pure but for the clock read by the caller. */
export function buildRequestRecord(track: RequestTrack, context: RecordContext): RequestRecord {
  const asked = track.asked
  const log = track.log
  const decision = log?.decision ?? null
  const served = track.served
  const error = track.error
  const extra = (served?.extraFields ?? (error?.extraFields as Served['extraFields'] | undefined)) ?? null
  const attempts: RecordedAttempt[] = extra ? extra.attempts.map(copyAttempt) : []

  const pinned = decision?.pinned ?? null
  const requestedProvider = pinned?.provider ?? null
  const requestedModel = pinned?.model ?? decision?.primary?.model ?? asked?.model ?? null

  let status = 200
  let failureClass: string | null = null
  let message: string | null = null
  if (error !== null) {
    status = error.status
    message = scrubSecrets(error.message, context.secrets())
    const last = attempts[attempts.length - 1]
    if (error.code === 'client_closed_request') failureClass = 'cancelled'
    else if (CALLER_FAULT_CODES.has(error.code)) failureClass = 'caller_fault'
    else if (last?.failure_class) failureClass = last.failure_class
    else failureClass = error.code === 'upstream_timeout' ? 'timeout' : 'unknown'
  } else if (track.streamError !== null) {
    failureClass = 'transient'
    message = scrubSecrets(`The upstream stream broke: ${track.streamError}`, context.secrets())
  } else if (!context.finished) {
    status = 499
    failureClass = 'cancelled'
    message = 'The client closed the request.'
  }

  const routing = summarize(track, attempts, extra, error === null && served !== null)
  const stream = asked?.stream ?? false
  return {
    id: track.id,
    at: new Date(track.startedAt).toISOString(),
    node_id: context.nodeId,
    region: context.region,
    surface: track.surface,
    gateway_key: track.gatewayKey,
    requested: { provider: requestedProvider, model: requestedModel ?? '', fallbacks: asked ? [...asked.fallbacks] : [], session_id: asked?.sessionId ?? null },
    served: { provider: extra?.provider ?? null, model: extra?.model ?? null, key_id: extra?.key_id ?? null, key_name: extra?.key_name ?? null },
    status,
    failure_class: failureClass,
    message,
    latency_ms: Math.max(0, context.endedAt - track.startedAt),
    ttft_ms: stream && track.firstChunkAt > 0 ? track.firstChunkAt - track.startedAt : null,
    usage: track.usage ?? usageOf(track),
    stream,
    attempts,
    routing,
    content: track.content ? contentOf(track, context.secrets()) : null,
  }
}

function copyAttempt(attempt: AttemptRecord): RecordedAttempt {
  return {
    provider: attempt.provider,
    model: attempt.model,
    key_id: attempt.key_id,
    key_name: attempt.key_name,
    status: attempt.status,
    failure_class: attempt.failure_class,
    latency_ms: attempt.latency_ms,
    wait_hint_ms: attempt.wait_hint_ms,
  }
}

/** The adaptive-routing summary, from the facts the router left in the request's log. */
function summarize(track: RequestTrack, attempts: readonly RecordedAttempt[], extra: Served['extraFields'] | null, ok: boolean): RoutingSummary {
  const log = track.log
  const decision = log?.decision ?? null
  const asked = track.asked
  const plan = log?.plan ?? null
  // The plan says who picked the provider and whether routing moved it off the named one; without
  // one (the request failed before routing), a `provider/model` counts as the caller's pick.
  const pickedByCaller = asked?.directKey === true || (plan !== null ? plan.pickedBy === 'request' : decision !== null ? CALLER_PICKED.has(decision.reason) : (asked?.model.includes('/') ?? false))
  const movedOff = plan !== null ? plan.movedOff : decision !== null && decision.reason === 'pinned_rerouted' && decision.pinned !== null ? { provider: decision.pinned.provider, reason: 'failed' } : null
  const servedProvider = ok ? (extra?.provider ?? null) : null
  const servedModel = ok ? (extra?.model ?? null) : null
  let addedFallbackServed = false
  if (servedProvider !== null) {
    if (plan !== null) addedFallbackServed = plan.targets.some((target) => target.source === 'added' && target.provider === servedProvider && target.model === servedModel)
    else if (decision !== null) {
      const primary = decision.primary
      const isPrimary = primary !== null && primary.provider === servedProvider && primary.model === servedModel
      if (!isPrimary) addedFallbackServed = decision.appended.some((direction) => direction.provider === servedProvider && direction.model === servedModel)
    }
  }
  let check: RoutingSummary['check'] = null
  if (log?.check) {
    const { provider, model } = log.check
    const attempt = attempts.find((candidate) => candidate.provider === provider && candidate.model === model && (log.check!.keyId === null || candidate.key_id === log.check!.keyId))
    const keyId = log.check.keyId ?? attempt?.key_id ?? null
    if (keyId !== null) {
      const outcome = attempt === undefined ? 'not_sent' : attempt.failure_class === null ? 'served' : isHoldReason(attempt.failure_class) ? 'refused_again' : 'inconclusive'
      check = { key_id: keyId, key_name: attempt?.key_name ?? keyId, provider, model, outcome }
    }
  }
  let lines: string[] = log?.lines ?? []
  if (log !== null && !log.enabled && decision !== null) {
    // The provider decision's sentences are built here, off the request path, from the decision itself.
    const full = new RoutingLog(true)
    full.addEntries(directionLog(decision, log.session ?? undefined))
    lines = full.lines.concat(log.lines)
  }
  return {
    picked_by: pickedByCaller ? 'caller' : 'routing',
    // The plan's 'held' means "left out: every key failed or held", which cannot tell the two apart: both read as failed here.
    moved_off: movedOff === null ? null : { provider: movedOff.provider, reason: 'failed' },
    skipped_keys: (log?.skipped ?? []).map((key) => ({ provider: key.provider, model: key.model, key_id: key.keyId, key_name: key.keyName, reason: key.reason })),
    check,
    added_fallback_served: addedFallbackServed,
    session_kept: log?.session === 'kept' ? true : log?.session === 'moved_not_offered' || log?.session === 'moved_key_unavailable' ? false : null,
    pinned_kept_failed: decision?.reason === 'pinned_failed_kept',
    log: lines,
  }
}

/** Token counts: what the surface read, else the JSON answer's, else the last stream chunk's. */
function usageOf(track: RequestTrack): RecordedUsage | null {
  const success = track.served?.success
  if (success === undefined) return null
  if (success.kind === 'json') {
    const usage = success.usage
    return usage === null ? null : { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens }
  }
  if (track.lastChunk === null || !track.lastChunk.includes('"usage"')) return null
  try {
    const chunk = JSON.parse(track.lastChunk) as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }
    const prompt = chunk.usage?.prompt_tokens
    const completion = chunk.usage?.completion_tokens
    if (typeof prompt !== 'number' || typeof completion !== 'number') return null
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
  } catch {
    return null
  }
}

function contentOf(track: RequestTrack, secrets: readonly string[]): NonNullable<RequestRecord['content']> {
  let response = track.responseText
  const success = track.served?.success
  if (success?.kind === 'json') response = success.bytes !== undefined ? success.bytes.toString('utf8', 0, Math.min(success.bytes.length, MAX_CONTENT_CHARS * 4)) : JSON.stringify(success.body)
  else if (track.error !== null) response = JSON.stringify(track.error.toJSON())
  const request = track.asked?.body ?? null
  const truncated = (request?.length ?? 0) > MAX_CONTENT_CHARS || (response?.length ?? 0) > MAX_CONTENT_CHARS
  return {
    request: request === null ? null : scrubSecrets(request.slice(0, MAX_CONTENT_CHARS), secrets),
    response: response === null ? null : scrubSecrets(response.slice(0, MAX_CONTENT_CHARS), secrets),
    truncated,
  }
}
