/**
 * The spans of one inference request (issue 40): a SERVER span for the request and a CLIENT
 * span per upstream attempt, with `gen_ai.*` and `switchboard.*` attributes and events for what
 * routing did (a held key skipped, a key rotation, a fallback, a hold placed, a deadline hit, a
 * check). Built only while tracing is on; nothing here decides anything: it records what the
 * dispatch and routing returned. Never a secret: keys are named by their name, never their value,
 * and no header, provider message or (unless content recording is on) body goes in.
 */
import { SpanKind, SpanStatusCode, type Attributes, type Context, type Link } from '@opentelemetry/api'
import type { AttemptEffects, AttemptFailure, TokenUsage, TraceOrigin } from '@switchboard/routing'
import type { ProviderType } from '@switchboard/providers'
import type { DispatchStep } from '../../dispatch/dispatcher.ts'
import type { GatewayError } from '../../errors.ts'
import type { ExtraFields } from '../../inference/engine.ts'
import { ATTR, EVENT, operationOf, providerNameOf, spanName } from './names.ts'
import { childSpan, rootSpan, type RequestSpan, type SpanMaker } from './spans.ts'

/** The attributes the spans of one route, target and key, or answer set alike (SharedAttributes: encoded once). */
const SERVER_SHARED = [ATTR.httpMethod, ATTR.urlPath, ATTR.httpRoute, ATTR.surface, ATTR.operation]
const ASKED_SHARED = [...SERVER_SHARED, ATTR.requestModel, ATTR.stream]
const CLIENT_SHARED = [ATTR.operation, ATTR.providerName, ATTR.system, ATTR.requestModel, ATTR.provider, ATTR.keyName, ATTR.attempt, ATTR.targetIndex, ATTR.check]
const SERVED_SHARED = [...CLIENT_SHARED, ATTR.httpStatus, ATTR.responseModel]
const ANSWERED_SHARED = [ATTR.httpStatus, ATTR.responseModel, ATTR.provider, ATTR.attempts]
const ANSWERED_KEY_SHARED = [...ANSWERED_SHARED, ATTR.keyName]

/** The SERVER span of one request and what its attempts need to hang under it. */
export class RequestTrace {
  readonly span: RequestSpan
  /** The span is sampled: attributes and events are worth building. */
  readonly recording: boolean
  readonly operation: string
  private attempts = 0
  /** The route's attributes are set (with what the caller asked for, or at the end). */
  private routed = false
  private lastIndex = -1
  private lastKeyName: string | null = null
  private lastFailure: string | null = null
  private answeredAlready = false

  /** `parent`: the caller's context when its traceparent was valid. */
  constructor(maker: SpanMaker, parent: Context | null, private readonly method: string, private readonly path: string, private readonly surface: string, readonly content: boolean) {
    this.operation = operationOf(surface)
    this.span = rootSpan(maker, spanName(method, path), SpanKind.SERVER, parent)
    this.recording = this.span.isRecording()
  }

  /** What the caller asked for (the body only when content recording is on). */
  asked(requestId: string, model: string, fallbacks: readonly string[], stream: boolean, body: () => string): void {
    if (!this.recording) return
    const span = this.span
    span.setAttribute(ATTR.requestId, requestId)
    // The route's attributes and these in one shared set.
    this.routed = true
    span.setShared(ASKED_SHARED, [this.method, this.path, this.path, this.surface, this.operation, model, stream])
    if (fallbacks.length > 0) span.setAttribute(ATTR.fallbacks, [...fallbacks])
    if (this.content) span.setAttribute(ATTR.requestBody, body())
  }

  /** Starts the CLIENT span of an attempt routing planned; a rotation or a fallback is an event on the request's span. */
  attempt(step: DispatchStep, type: ProviderType): AttemptTrace {
    const number = ++this.attempts
    const provider = step.target.provider.name
    const keyName = step.key.name
    let links: Link[] | undefined
    for (const skipped of step.skipped) {
      if (skipped.origins === undefined) continue
      for (const origin of skipped.origins) (links ??= []).push(linkTo(origin, provider, skipped.keyName))
    }
    const span = childSpan(this.span, spanName(this.operation, step.target.model), SpanKind.CLIENT, links)
    const attempt = new AttemptTrace(span, this, step, number, providerNameOf(type))
    if (attempt.recording) {
      if (this.lastIndex === step.index && this.lastKeyName !== null && this.lastKeyName !== keyName) {
        this.span.addEvent(EVENT.keyRotated, { [ATTR.provider]: provider, [ATTR.keyName]: keyName, [ATTR.previousKeyName]: this.lastKeyName, [ATTR.failureClass]: this.lastFailure ?? 'none', [ATTR.attempt]: number })
      } else if (this.lastIndex >= 0 && this.lastIndex !== step.index) {
        this.span.addEvent(EVENT.fallback, { [ATTR.provider]: provider, [ATTR.requestModel]: step.target.model, [ATTR.failureClass]: this.lastFailure ?? 'none', [ATTR.attempt]: number })
      }
      for (const skipped of step.skipped) {
        span.addEvent(EVENT.keySkipped, { [ATTR.provider]: provider, [ATTR.keyName]: skipped.keyName, [ATTR.skipReason]: skipped.reason, [ATTR.linked]: skipped.origins?.length ?? 0 })
      }
    }
    this.lastIndex = step.index
    this.lastKeyName = keyName
    return attempt
  }

  /** The attempt's failure class, for the next attempt's rotation or fallback event. */
  attemptEnded(failure: AttemptFailure | null): void {
    this.lastFailure = failure?.failureClass ?? null
  }

  /** The request was answered by what `extra` names. */
  answered(extra: ExtraFields, usage: TokenUsage | null, responseBody: (() => string) | null): void {
    if (!this.recording) return
    this.answeredAlready = true
    const span = this.span
    if (extra.key_name === null) span.setShared(ANSWERED_SHARED, [200, extra.model, extra.provider, extra.attempts.length])
    else span.setShared(ANSWERED_KEY_SHARED, [200, extra.model, extra.provider, extra.attempts.length, extra.key_name])
    if (usage !== null) {
      span.setAttribute(ATTR.inputTokens, usage.promptTokens)
      span.setAttribute(ATTR.outputTokens, usage.completionTokens)
    }
    if (this.content && responseBody !== null) span.setAttribute(ATTR.responseBody, responseBody())
  }

  /** The request ended in an error (`error.type` is the gateway's stable code). */
  failed(error: GatewayError): void {
    // The caller had its answer: the span says so (and its shared attributes are never set twice).
    if (!this.recording || this.answeredAlready) return
    const attempts = (error.extraFields as Partial<ExtraFields> | undefined)?.attempts ?? []
    this.span.setAttribute(ATTR.httpStatus, error.status).setAttribute(ATTR.errorType, error.code).setAttribute(ATTR.attempts, attempts.length)
    this.span.setAttribute(ATTR.failureClass, attempts.at(-1)?.failure_class)
    // Server spans: a 4xx is the caller's, not an error of this service (OpenTelemetry HTTP conventions).
    if (error.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.code })
  }

  end(): void {
    if (this.recording && !this.routed) this.span.setShared(SERVER_SHARED, [this.method, this.path, this.path, this.surface, this.operation])
    this.span.end()
  }
}

/** The CLIENT span of one upstream attempt. */
export class AttemptTrace {
  readonly recording: boolean
  /** The span's W3C context, sent upstream as `traceparent`. */
  readonly traceparent: string
  /** Where a hold this attempt's refusal places comes from (undefined when the span is not sampled: nothing to link to). */
  readonly origin: TraceOrigin | undefined
  private ended = false

  /** `system`: the provider's `gen_ai.provider.name`. */
  constructor(readonly span: RequestSpan, private readonly request: RequestTrace, private readonly step: DispatchStep, private readonly number: number, private readonly system: string) {
    const context = span.spanContext()
    this.recording = span.isRecording()
    this.traceparent = `00-${context.traceId}-${context.spanId}-${context.traceFlags & 1 ? '01' : '00'}`
    this.origin = this.recording ? { traceId: context.traceId, spanId: context.spanId } : undefined
  }

  /**
   * How the attempt went, as routing classed it, and what routing did about it: holds placed,
   * the check's outcome. Ends the span.
   */
  reported(effects: AttemptEffects, status: number, usage: TokenUsage | null): void {
    if (this.ended) return
    this.ended = true
    const failure = effects.failure
    this.request.attemptEnded(failure)
    const span = this.span
    if (this.recording) {
      if (failure !== null) {
        span.setAttribute(ATTR.httpStatus, failure.status)
        span.setAttribute(ATTR.failureClass, failure.failureClass)
        span.setAttribute(ATTR.errorType, failure.failureClass)
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.failureClass })
        if (failure.failureClass === 'timeout') span.addEvent(EVENT.deadlineHit, deadlineOf(failure, this.step))
      }
      this.setTarget(failure === null ? status : null)
      if (usage !== null) {
        span.setAttribute(ATTR.inputTokens, usage.promptTokens)
        span.setAttribute(ATTR.outputTokens, usage.completionTokens)
      }
      this.holdEvents(effects)
    }
    span.end()
  }

  /** Never sent (the caller left during the delay, the body cannot be sent): the span ends with the reason. */
  abandoned(reason: 'cancelled' | 'not_sent'): void {
    if (this.ended) return
    this.ended = true
    this.request.attemptEnded(null)
    if (this.recording) {
      this.setTarget(null)
      this.span.setAttribute(ATTR.abandoned, reason)
    }
    this.span.end()
  }

  /** The attempt's target, key and place, and how it was served when it was (`status`): one shared set, set as the span ends. */
  private setTarget(status: number | null): void {
    const { target, key, index, check } = this.step
    const operation = this.request.operation
    const system = this.system
    if (status === null) this.span.setShared(CLIENT_SHARED, [operation, system, system, target.model, target.provider.name, key.name, this.number, index, check])
    else this.span.setShared(SERVED_SHARED, [operation, system, system, target.model, target.provider.name, key.name, this.number, index, check, status, target.model])
  }

  private holdEvents(effects: AttemptEffects): void {
    const news = effects.holds
    const step = this.step
    let checked = false
    if (news !== null) {
      for (const change of news.changes) {
        const attributes: Attributes = { [ATTR.provider]: change.provider, [ATTR.keyName]: change.key }
        if (change.kind !== 'released') attributes[ATTR.holdReason] = change.reason
        if (change.model !== null) attributes[ATTR.requestModel] = change.model
        if (change.kind === 'placed') {
          const entry = news.changed.find((candidate) => candidate.provider === change.provider && candidate.model === change.model && candidate.state === 'held')
          if (entry !== undefined) {
            attributes[ATTR.holdRung] = entry.rung
            attributes[ATTR.holdWaitMs] = entry.baseWaitMs
          }
          this.span.addEvent(EVENT.holdPlaced, attributes)
        } else if (step.check) {
          checked = true
          attributes[ATTR.checkOutcome] = change.kind === 'renewed' ? change.outcome : `released_${change.cause}`
          this.span.addEvent(EVENT.check, attributes)
        }
      }
    }
    if (step.check && !checked) {
      this.span.addEvent(EVENT.check, { [ATTR.provider]: step.target.provider.name, [ATTR.keyName]: step.key.name, [ATTR.checkOutcome]: effects.failure === null ? 'served' : 'no_change' })
    }
  }
}

function linkTo(origin: TraceOrigin, provider: string, keyName: string): Link {
  return { context: { traceId: origin.traceId, spanId: origin.spanId, traceFlags: 1, isRemote: true }, attributes: { [ATTR.provider]: provider, [ATTR.keyName]: keyName, [ATTR.linkKind]: 'hold_placed' } }
}

/** Which deadline a timeout hit, and how long it was. */
function deadlineOf(failure: AttemptFailure, step: DispatchStep): Attributes {
  if (failure.code === 'first_token_timeout') return { [ATTR.deadline]: 'first_token', [ATTR.deadlineMs]: step.firstTokenMs ?? 0 }
  if (failure.code === 'stream_idle_timeout') return { [ATTR.deadline]: 'stream_idle', [ATTR.deadlineMs]: step.idleMs }
  return { [ATTR.deadline]: 'request', [ATTR.deadlineMs]: step.headersMs }
}
