/**
 * The per-request record (issue 15): the request path only fills a `RequestTrack`; once the
 * response closes, listeners (the request log, the per-minute counts) get it, and the record
 * (`RequestRecord` of @switchboard/history) is built from it. While nobody listens, nothing is tracked.
 */
import type { ServerResponse } from 'node:http'
import { isHoldReason, RoutingLog, type TokenUsage } from '@switchboard/routing'
import type { RecordedAttempt, RecordedUsage, RequestRecord, RequestRecordListener, RequestSurface, RoutingSummary } from '@switchboard/history'
import type { GatewayError } from '../errors.ts'
import { servedUsage, type Served } from '../inference/engine.ts'
import { scrubSecrets } from './scrub.ts'
import { createIsoTime } from './iso-time.ts'
import { addedFallbackServed, extraOf, failureClassOf, movedOffOf, pickedByCaller, sessionKeptOf, pinnedKeptFailed, requestedModel, requestedProvider } from './request-facts.ts'

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

export type RecorderInit = Pick<RecordContext, 'nodeId' | 'region'>

/** A light listener (history's counts) reads the track itself: no record is built for it. `finished`: false when the caller left early. */
export type TrackListener = (track: RequestTrack, finished: boolean, endedAt: number) => void

/** Hands each request's record to its listeners. */
export type RequestRecorder = ReturnType<typeof createRequestRecorder>

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

/** What one request did, filled in as it goes: `asked` and `log`, then `served` or `error`; `chunk` per event streamed. */
export class RequestTrack {
  asked: AskedRequest | null = null
  log: RoutingLog | null = null
  served: Served | null = null
  error: GatewayError | null = null
  /** The authenticated caller's gateway key name (issue 13), once the surface knows it. */
  gatewayKey: string | null = null
  /** Token counts a surface read itself (overrides what the record reads from the answer). */
  usage: TokenUsage | null = null
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
    /** A whole record is built for this request (the request log listened when it arrived). */
    readonly recorded = true,
  ) {}

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

  /** The stream broke and `served` continues it: the record names what served the end. */
  continued(served: Served): void {
    this.served = served
  }
}

/** Creates the recorder of one node. */
export function createRequestRecorder(components: RecorderComponents, init: RecorderInit) {
  const listeners: RequestRecordListener[] = []
  const trackListeners: TrackListener[] = []
  /** Runs a listener (or the record's build); what it throws is reported, never passed to the request. */
  const safely = (run: () => void) => {
    try {
      run()
    } catch (error) {
      components.onListenerError?.(error)
    }
  }
  const emit = (track: RequestTrack, finished: boolean) => {
    const endedAt = components.now()
    // Light listeners first: they read the track as it is, whatever a record listener does.
    for (const listener of trackListeners) safely(() => listener(track, finished, endedAt))
    if (!track.recorded || listeners.length === 0) return
    safely(() => {
      const record = buildRequestRecord(track, { nodeId: init.nodeId, region: init.region, endedAt, finished, secrets: components.secrets })
      for (const listener of listeners) safely(() => listener(record))
    })
  }
  const adder =
    <Listener>(list: Listener[]) =>
    (listener: Listener) => {
      list.push(listener)
      return () => {
        const index = list.indexOf(listener)
        if (index >= 0) list.splice(index, 1)
      }
    }
  return {
    /** True while anyone listens (records or tracks); the request path tracks nothing otherwise. */
    get active(): boolean {
      return listeners.length > 0 || trackListeners.length > 0
    },
    /** Adds a record listener; returns its removal. */
    on: adder(listeners),
    /** Adds a light listener on the finished track; returns its removal. */
    onTrack: adder(trackListeners),
    /** Starts the record of one request; it is emitted once `outgoing` closes. */
    track(outgoing: ServerResponse, surface: RequestSurface, startedAt: number, id: string): RequestTrack {
      const recorded = listeners.length > 0
      const track = new RequestTrack(id, surface, startedAt, recorded && components.recordContent(), components.now, recorded)
      // 'close' comes once per response: a plain listener spares the once() wrapper per request.
      outgoing.on('close', () => emit(track, outgoing.writableFinished))
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

/** Formats every record's `at` (it only remembers the minute it formatted last: pure as far as a caller can tell). */
const isoTime = createIsoTime()

/** Builds the record of a finished request from its track. Pure but for the clock read by the caller. */
export function buildRequestRecord(track: RequestTrack, context: RecordContext): RequestRecord {
  const asked = track.asked
  const error = track.error
  const extra = extraOf(track)
  const attempts: RecordedAttempt[] = extra ? extra.attempts.map((attempt) => ({ ...attempt })) : []

  const failureClass = failureClassOf(track, context.finished, attempts[attempts.length - 1]?.failure_class)
  let status = 200
  let message: string | null = null
  if (error !== null) {
    status = error.status
    message = scrubSecrets(error.message, context.secrets())
  } else if (track.streamError !== null) {
    message = scrubSecrets(`The upstream stream broke: ${track.streamError}`, context.secrets())
  } else if (!context.finished) {
    status = 499
    message = 'The client closed the request.'
  }

  const stream = asked?.stream ?? false
  return {
    id: track.id,
    at: isoTime(track.startedAt),
    node_id: context.nodeId,
    region: context.region,
    surface: track.surface,
    gateway_key: track.gatewayKey,
    requested: { provider: requestedProvider(track), model: requestedModel(track), fallbacks: asked ? [...asked.fallbacks] : [], session_id: asked?.sessionId ?? null },
    served: { provider: extra?.provider ?? null, model: extra?.model ?? null, key_id: extra?.key_id ?? null, key_name: extra?.key_name ?? null },
    status,
    failure_class: failureClass,
    message,
    latency_ms: Math.max(0, context.endedAt - track.startedAt),
    ttft_ms: stream && track.firstChunkAt > 0 ? track.firstChunkAt - track.startedAt : null,
    usage: usageOf(track),
    stream,
    attempts,
    routing: summarize(track, attempts),
    content: track.content ? contentOf(track, context.secrets()) : null,
  }
}

/** The adaptive-routing summary, from the facts the router left in the request's log. */
function summarize(track: RequestTrack, attempts: readonly RecordedAttempt[]): RoutingSummary {
  const log = track.log
  const decision = log?.decision ?? null
  const movedOff = movedOffOf(track)
  let check: RoutingSummary['check'] = null
  if (log?.check) {
    const { provider, model, keyId } = log.check
    const attempt = attempts.find((candidate) => candidate.provider === provider && candidate.model === model && candidate.key_id === keyId)
    const outcome = attempt === undefined ? 'not_sent' : attempt.failure_class === null ? 'served' : isHoldReason(attempt.failure_class) ? 'refused_again' : 'inconclusive'
    check = { key_id: keyId, key_name: attempt?.key_name ?? keyId, provider, model, outcome }
  }
  let lines: string[] = log?.lines ?? []
  if (log !== null && !log.enabled && decision !== null) {
    // The provider decision's sentences are built here, off the request path, from the decision itself.
    const full = new RoutingLog(true)
    full.addDecision(decision, log.session ?? undefined)
    lines = full.lines.concat(log.lines)
  }
  return {
    picked_by: pickedByCaller(track) ? 'caller' : 'routing',
    // The plan's 'held' means "left out: every key failed or held", which cannot tell the two apart: both read as failed here.
    moved_off: movedOff === null ? null : { provider: movedOff, reason: 'failed' },
    skipped_keys: (log?.skipped ?? []).map((key) => ({ provider: key.provider, model: key.model, key_id: key.keyId, key_name: key.keyName, reason: key.reason })),
    check,
    added_fallback_served: addedFallbackServed(track),
    session_kept: sessionKeptOf(track),
    pinned_kept_failed: pinnedKeptFailed(track),
    log: lines,
  }
}

/** Token counts: what the surface read, else what the answer reported, a stream and its continuations summed (all were billed). */
function usageOf(track: RequestTrack): RecordedUsage | null {
  const usage = track.usage ?? (track.served === null ? null : servedUsage(track.served))
  return usage === null ? null : { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens }
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
