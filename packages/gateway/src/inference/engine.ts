/**
 * The request path: sends the attempts routing plans, one at a time, and tells it how each went
 * (`dispatch.next()`, `dispatch.report()`). Spec: reference/retries-and-fallbacks.txt. Which
 * target, which key, how long to wait and when to stop are routing's; here are the I/O, the
 * first-chunk gate and `extra_fields.attempts`, whatever the surface.
 */
import type { AttemptFailure, TargetFailure, TargetFilter, TargetFit, TokenUsage } from '@switchboard/routing'
import { canServe, continuationBody, ContinuationSplicer, readSent, speaksNatively, type Cancellation, type ChatRequestBody, type JsonSuccess, type ProviderKey, type RateLimitExhaustion, type StreamFormat, type StreamSuccess, type StreamUsage } from '@switchboard/providers'
import type { RecordedAttempt } from '@switchboard/history'
import { GatewayError } from '../errors.ts'
import type { Dispatch, DispatchEnd, Dispatcher, DispatchStep, DispatchTarget, RequestContext, RoutedRequest } from '../dispatch/dispatcher.ts'
import { runAttempt, type SurfaceCall } from './attempt.ts'
import { GuardedStream, type GuardedAttempt } from './stream-guard.ts'
import type { AttemptTrace } from '../observability/tracing/request-trace.ts'

/** `extra_fields` of every response and error (design.md, "External contract"). */
export interface ExtraFields {
  provider: string
  model: string
  key_id: string | null
  key_name: string | null
  attempts: RecordedAttempt[]
  /** The request's id (also the `x-request-id` header): find it in the request log with `GET /api/logs/:id`. */
  request_id: string
  /** The routing log, when the request asked for it (`x-bf-routing-log: true`). */
  routing_log?: string[]
}

/** A served request: the upstream's success and the extra fields to attach. */
export interface Served {
  success: JsonSuccess | StreamSuccess
  extraFields: ExtraFields
  /** The upstream call; `abort()` ends it (streams: when the caller goes away). */
  upstream: { abort(): void }
  /** Told of each stream event sent and of a stream that broke (the request log's track), when someone records. */
  observer?: StreamObserver
  /** A stream that broke after content went out asks for the rest here, with every event it sent (null: nothing continues it). */
  resume?: (sent: readonly string[]) => Promise<Served | null>
  /** A continuation's events as the caller gets them, spliced onto what was sent. */
  splicer?: ContinuationSplicer
  /** The served stream this one continues. */
  previous?: Served
  /** A stream's token counts as its events report them. */
  streamUsage?: StreamUsage
}

/** The token counts of a served answer: the JSON answer's, or a stream's with every stream it continues (each was billed). */
export function servedUsage(served: Served): TokenUsage | null {
  let prompt = 0
  let completion = 0
  let seen = false
  for (let at: Served | undefined = served; at !== undefined; at = at.previous) {
    const usage = at.success.kind === 'json' ? at.success.usage : (at.streamUsage?.usage ?? null)
    if (usage === null) continue
    prompt += usage.promptTokens
    completion += usage.completionTokens
    seen = true
  }
  return seen ? { promptTokens: prompt, completionTokens: completion } : null
}

/** Watches a stream as it goes to the caller. */
export interface StreamObserver {
  chunk(data: string): void
  broke(message: string): void
  /** The stream broke and `served` continues it: the record names what served the end. */
  continued?(served: Served): void
}

export interface EngineComponents {
  dispatcher: Dispatcher
  now: () => number
  /** Waits `ms`; rejects early when `cancellation` aborts. */
  sleep: (ms: number, cancellation: Cancellation) => Promise<void>
}

/** A request as the engine serves it, whatever surface it came in on. */
export interface EngineRequest extends RoutedRequest {
  /** The body in OpenAI chat shape; each adapter renders it for its provider. */
  body: ChatRequestBody
  /** Set on the other surfaces (Messages, Responses, embeddings): each attempt sends this instead of `body`. */
  surface?: SurfaceCall
}

const SURFACE_NAMES = { messages: 'Anthropic Messages', count_tokens: 'token counting', responses: 'OpenAI Responses', embeddings: 'embeddings' } as const

/** What routing may not choose: providers outside the gateway key's, or ones that cannot serve the surface. */
function requestFilter(allowed: ReadonlySet<string> | undefined, surface: SurfaceCall | undefined): TargetFilter<DispatchTarget> {
  return {
    fit(target): TargetFit {
      if (allowed !== undefined && !allowed.has(target.provider.name)) return 'not_allowed'
      if (surface === undefined) return 'fits'
      const adapter = target.provider.adapter
      return (surface.nativeOnly === true ? speaksNatively(adapter, surface.surface) : canServe(adapter, surface.surface)) ? 'fits' : 'not_served'
    },
  }
}

/** Serves a request or throws a GatewayError carrying extra_fields. */
export async function serveChat(components: EngineComponents, request: EngineRequest, caller: Cancellation, context: RequestContext): Promise<Served> {
  const surface = request.surface
  const streams = surface === undefined ? request.body.stream === true : surface.stream
  const learning = components.dispatcher.learn(request, context)
  if (learning !== null) await learning
  const dispatch = components.dispatcher.plan(request, context, streams, requestFilter(context.allowedProviders, surface))
  const attempts: RecordedAttempt[] = []
  for (;;) {
    const step = dispatch.next()
    if (step.kind === 'end') throw endError(step, dispatch, request, attempts)
    const served = await runStep(components, dispatch, step, request, caller, attempts)
    if (served === null) continue
    // A stream that could be continued keeps what it sent (render.ts): only when a target could continue it.
    if (served.success.kind === 'stream' && step.continuable) served.resume = (sent) => continueStream(components, dispatch, step, request, caller, attempts, sent)
    return served
  }
}

/** Sends one attempt routing planned; the served answer, or null when it failed (routing has its report). */
async function runStep(components: EngineComponents, dispatch: Dispatch, step: DispatchStep, request: EngineRequest, caller: Cancellation, attempts: RecordedAttempt[]): Promise<Served | null> {
  const { target, key } = step
  const surface = request.surface
  // Tracing on: the attempt's CLIENT span (off, `trace` is absent and nothing is built).
  const span = dispatch.context.trace?.attempt(step, target.provider.adapter.type)
  const notSent = (cancelled: boolean) => {
    dispatch.report(step, { sent: false, cancelled })
    span?.abandoned(cancelled ? 'cancelled' : 'not_sent')
  }
  if (step.delayMs > 0) {
    try {
      await components.sleep(step.delayMs, caller)
    } catch {
      notSent(true)
      return null
    }
  }
  const started = components.now()
  let run
  try {
    run = await runAttempt(target.provider, request.body, target.model, key, caller, step.headersMs, surface, span?.traceparent)
  } catch (error) {
    notSent(false)
    throw error
  }
  const result = run.result
  // What a translation left out (a hosted tool, Anthropic beta flags), said where the request's routing is told.
  if (result.notes !== undefined) for (const note of result.notes) dispatch.context.log.add(`${target.provider.name}/${target.model}: ${note}`)
  // Never sent (the body cannot be said in this provider's format): the caller's 400, and no attempt to report.
  if (!result.ok && result.notSent === true) {
    notSent(false)
    throw new GatewayError('invalid_request', `${target.provider.name}: ${result.failure.message}`)
  }
  let failure: AttemptFailure | null
  let stream: GuardedStream | null = null
  let attempt: StreamAttempt | null = null
  if (result.ok && result.kind === 'stream') {
    // A stream is in flight until it ends, and only its end says how it went: the guard reports it then.
    attempt = new StreamAttempt(dispatch, step, started, run, result.rateLimit, components.now, span, result.status)
    stream = new GuardedStream(result.events, { idleMs: step.idleMs, now: components.now, attempt })
    // The first-chunk gate: what fails before the first content fails over like any attempt.
    const gated = await stream.gate(streamFormatOf(surface), step.firstTokenMs === null ? null : step.firstTokenMs - (components.now() - started))
    if (gated !== null) {
      run.abort()
      failure = attempt.ended(gated, null)
      stream = null
    } else {
      attempt.passed = true
      failure = null
    }
  } else {
    // A JSON answer's token counts let the balancer tell a long completion from a slow provider.
    const usage = result.ok && result.kind === 'json' ? result.usage : null
    const effects = dispatch.report(step, { sent: true, startedAt: started, failure: result.ok ? null : result.failure, served: result.ok, rateLimit: result.ok ? result.rateLimit : null, usage, origin: span?.origin })
    failure = effects.failure
    if (span !== undefined) span.reported(effects, result.ok ? result.status : 0, usage)
  }
  const record = attemptRecord(step, failure, result.ok ? result.status : 0, components.now() - started)
  if (attempt !== null) attempt.record = record
  attempts.push(record)
  if (failure !== null || !result.ok) return null
  const extraFields = extraFieldsOf(target, key, attempts, dispatch.context)
  if (stream !== null) {
    const success: StreamSuccess = { ok: true, kind: 'stream', status: result.status, headers: result.headers, rateLimit: result.rateLimit, events: stream }
    return { success, extraFields, upstream: run, streamUsage: stream.usage }
  }
  return { success: result as JsonSuccess, extraFields, upstream: run }
}

/** The `extra_fields` of an answer or error from `target` (`key`: the key that served or failed last). */
function extraFieldsOf(target: DispatchTarget, key: ProviderKey | null, attempts: RecordedAttempt[], context: RequestContext): ExtraFields {
  const fields: ExtraFields = { provider: target.provider.name, model: target.model, key_id: key?.id ?? null, key_name: key?.name ?? null, attempts, request_id: context.requestId }
  if (context.log.enabled) fields.routing_log = context.log.lines
  return fields
}

/** One upstream attempt as `extra_fields.attempts[]` reports it. */
function attemptRecord(step: DispatchStep, failure: AttemptFailure | null, status: number, latencyMs: number): RecordedAttempt {
  return {
    provider: step.target.provider.name, model: step.target.model, key_id: step.key.id, key_name: step.key.name,
    status: failure !== null ? failure.status : status, failure_class: failure?.failureClass ?? null, latency_ms: latencyMs, wait_hint_ms: failure?.waitHintMs ?? null,
  }
}

/** A streamed attempt as its guard sees it: aborted at a deadline, reported to routing once, when the stream ends. */
class StreamAttempt implements GuardedAttempt {
  /** The stream passed its first-chunk gate: the caller got it. */
  passed = false
  /** Its line in `extra_fields.attempts[]`, once written. */
  record: RecordedAttempt | null = null
  private reported: AttemptFailure | null | undefined = undefined

  constructor(
    private readonly dispatch: Dispatch,
    private readonly step: DispatchStep,
    private readonly startedAt: number,
    private readonly upstream: { abort(): void },
    private readonly rateLimit: RateLimitExhaustion | null,
    private readonly now: () => number,
    /** Its CLIENT span, while tracing is on: ended with the stream. */
    private readonly span: AttemptTrace | undefined,
    private readonly status: number,
  ) {}

  abort(): void {
    this.upstream.abort()
  }

  /** Reports the ending once; returns it as routing classes it. */
  ended(failure: AttemptFailure | null, usage: TokenUsage | null): AttemptFailure | null {
    if (this.reported !== undefined) return this.reported
    const effects = this.dispatch.report(this.step, { sent: true, startedAt: this.startedAt, failure, served: this.passed, rateLimit: this.rateLimit, usage, origin: this.span?.origin })
    const reported = effects.failure
    this.reported = reported
    if (this.span !== undefined) this.span.reported(effects, this.status, usage)
    // A stream that broke after it was served: its attempt says so (the caller leaving is nobody's failure).
    const record = this.record
    if (record !== null && reported !== null && reported.failureClass !== 'cancelled') {
      record.failure_class = reported.failureClass
      record.latency_ms = this.now() - this.startedAt
    }
    return reported
  }
}

/**
 * The rest of a stream that broke after content went out (issue 35): routing walks the targets
 * that continue from an assistant prefill, each asked for the answer from the text already sent.
 * Null when what was sent cannot be continued (a tool call, thinking) or no target continues it.
 */
async function continueStream(components: EngineComponents, dispatch: Dispatch, broke: DispatchStep, request: EngineRequest, caller: Cancellation, attempts: RecordedAttempt[], sent: readonly string[]): Promise<Served | null> {
  const surface = request.surface
  const format = streamFormatOf(surface)
  const sentSoFar = readSent(format, sent)
  if (!dispatch.resume(broke, sentSoFar.continuable, sentSoFar.text.length)) return null
  const text = sentSoFar.text
  const continued: EngineRequest = surface === undefined
    ? { ...request, body: continuationBody('chat', request.body, text) as ChatRequestBody }
    : { ...request, surface: { ...surface, bodyFor: () => continuationBody(format, surface.bodyFor(), text) } }
  for (;;) {
    const step = dispatch.next()
    if (step.kind === 'end') return null
    const served = await runStep(components, dispatch, step, continued, caller, attempts)
    if (served === null) continue
    if (served.success.kind !== 'stream') return null
    served.splicer = new ContinuationSplicer(format, sentSoFar)
    served.resume = (more) => continueStream(components, dispatch, step, request, caller, attempts, more)
    return served
  }
}

/** The event format of a request's stream. */
function streamFormatOf(surface: SurfaceCall | undefined): StreamFormat {
  return surface?.surface === 'messages' ? 'messages' : surface?.surface === 'responses' ? 'responses' : 'chat'
}

/** The error of a request that ended without an answer. */
function endError(end: DispatchEnd, dispatch: Dispatch, request: EngineRequest, attempts: RecordedAttempt[]): GatewayError {
  const surface = request.surface
  switch (end.outcome) {
    case 'failed':
      return toGatewayError(end.failure, attempts, dispatch.context)
    case 'not_served': {
      const names = dispatch.targets.map((target) => target.provider.name).join(', ')
      return new GatewayError('surface_not_served', `None of the providers of model "${request.model}" (${names}) serves ${SURFACE_NAMES[surface!.surface]}${surface!.nativeOnly === true ? ' natively' : ''}.`, { param: 'model' })
    }
    case 'not_allowed':
      return new GatewayError('gateway_key_forbidden', `No provider this gateway key may use (${[...dispatch.context.allowedProviders!].join(', ')}) serves model "${request.model}".`, { param: 'model' })
    default:
      return new GatewayError('model_not_served', `No provider can serve model "${request.model}".`, { param: 'model' })
  }
}

/** Maps how the primary (or the first failed target) ended to the error the caller gets. */
function toGatewayError(failure: TargetFailure<DispatchTarget, ProviderKey>, attempts: RecordedAttempt[], context: RequestContext): GatewayError {
  const { target, last, key } = failure
  const provider = target.provider.name
  const where = `${provider}/${target.model}`
  const extraFields = extraFieldsOf(target, key, attempts, context)
  const tries = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`
  const said = last ? ` The provider said: ${last.message}` : ''
  // The caller's own key: a refusal is about the caller's key, not the gateway's credentials.
  if (target.directKey !== undefined && last !== null && (failure.reason === 'credentials_exhausted' || last.failureClass === 'credential')) {
    return new GatewayError('direct_key_rejected', `${provider} refused the key sent in x-bf-direct-key (${last.failureClass}).${said}`, { extraFields })
  }
  switch (failure.reason) {
    case 'no_keys':
      return new GatewayError('model_not_served', `Provider "${provider}" has no key that serves model "${target.model}". Add the model to a key's "models", or use another provider.`, { param: 'model', extraFields })
    case 'context_length':
      // The provider's own words, as a caller talking to it directly would read them.
      return new GatewayError('context_length_exceeded', last?.message ?? `${where}: the request is longer than the model's context window, and no fallback took it.`, { extraFields })
    case 'caller_fault':
      return new GatewayError('upstream_rejected_request', last?.message ?? `${where} rejected the request.`, { status: last && last.status >= 400 && last.status < 500 ? last.status : 400, extraFields })
    case 'credentials_exhausted':
      return new GatewayError('upstream_credentials_exhausted', `Every key of ${provider} that serves ${target.model} was refused by the provider (${tries}); the provider credentials, not your gateway key, need attention.${said}`, { extraFields })
    case 'cancelled':
      return new GatewayError('client_closed_request', 'The client closed the request.', { extraFields })
    case 'retries_exhausted':
      break
  }
  if (failure.retryAfterMs !== null) {
    const seconds = Math.max(1, Math.ceil(failure.retryAfterMs / 1000))
    return new GatewayError('upstream_rate_limited', `${where}: every key that is not refused is rate limited or backing off (${tries}); the earliest is due in ${seconds}s.${said}`, { extraFields, retryAfterSeconds: seconds })
  }
  const failureClass = last?.failureClass
  if (failureClass === 'rate_limit') {
    const seconds = last!.waitHintMs !== null ? Math.max(1, Math.ceil(last!.waitHintMs / 1000)) : undefined
    return new GatewayError('upstream_rate_limited', `${where} is rate limiting every key tried (${tries}).${said}`, { extraFields, ...(seconds !== undefined ? { retryAfterSeconds: seconds } : {}) })
  }
  if (failureClass === 'timeout') return new GatewayError('upstream_timeout', `${where} did not answer in time (${tries}).${said}`, { extraFields })
  if (last && last.status === 0) return new GatewayError('upstream_unavailable', `${where} could not be reached (${tries}).${said}`, { extraFields })
  const status = last && last.status >= 500 && last.status < 600 ? last.status : 502
  return new GatewayError('upstream_error', `${where} failed (${tries}).${said}`, { status, extraFields })
}
