/**
 * The request path: the primary target with its full retry budget, then each fallback with
 * its own. Spec: reference/retries-and-fallbacks.txt ("The fallback logic follows a
 * predictable sequence"). Which targets and keys comes from the router; every upstream
 * attempt is recorded for `extra_fields.attempts` and reported back to the router.
 */
import { createKeyRotation, type AttemptFailure, type RotationStopReason } from '@switchboard/routing'
import { canServe, readUsage, speaksNatively, type Cancellation, type JsonSuccess, type ProviderKey, type StreamSuccess } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import type { RequestContext, PlannedTarget, Router, RequestPlan } from '../routing/router.ts'
import { runAttempt } from './attempt.ts'
import type { ChatRequest } from './validate.ts'

/** One upstream attempt as `extra_fields.attempts[]` reports it. */
export interface AttemptRecord {
  provider: string
  model: string
  key_id: string
  key_name: string
  status: number
  failure_class: AttemptFailure['failureClass'] | null
  latency_ms: number
  wait_hint_ms: number | null
}

/** `extra_fields` of every response and error (design.md, "External contract"). */
export interface ExtraFields {
  provider: string
  model: string
  key_id: string | null
  key_name: string | null
  attempts: AttemptRecord[]
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
}

/** Watches a stream as it goes to the caller. */
export interface StreamObserver {
  chunk(data: string): void
  broke(message: string): void
}

export interface EngineComponents {
  router: Router
  now: () => number
  random: () => number
  /** Waits `ms`; rejects early when `cancellation` aborts. */
  sleep: (ms: number, cancellation: Cancellation) => Promise<void>
}

/** What one target ended in when it did not serve. */
interface TargetFailure {
  reason: RotationStopReason
  last: AttemptFailure | null
  target: PlannedTarget
  key: ProviderKey | null
}

const SURFACE_NAMES = { messages: 'Anthropic Messages', count_tokens: 'token counting', responses: 'OpenAI Responses', embeddings: 'embeddings' } as const

/** Serves a validated request or throws a GatewayError carrying extra_fields. */
export async function serveChat(components: EngineComponents, request: ChatRequest, caller: Cancellation, context: RequestContext): Promise<Served> {
  const plan = components.router.plan(request, context)
  const attempts: AttemptRecord[] = []
  let primaryFailure: TargetFailure | null = null
  for (const target of plan.targets) {
    // A surface some providers cannot serve (embeddings at Anthropic) skips them, as if unoffered.
    const surface = request.surface
    if (surface !== undefined && !(surface.nativeOnly === true ? speaksNatively(target.provider.adapter, surface.surface) : canServe(target.provider.adapter, surface.surface))) continue
    const outcome = await serveTarget(components, plan, target, request, caller, attempts)
    if ('success' in outcome) return outcome
    primaryFailure ??= outcome
    // A caller fault is about the request, not the provider: no fallback can fix it.
    if (outcome.reason === 'caller_fault') throw toGatewayError(outcome, attempts, context)
    if (outcome.reason === 'cancelled') break
  }
  if (primaryFailure === null) {
    if (request.surface !== undefined && plan.targets.length > 0) {
      const names = plan.targets.map((target) => target.provider.name).join(', ')
      throw new GatewayError('surface_not_served', `None of the providers of model "${request.model}" (${names}) serves ${SURFACE_NAMES[request.surface.surface]}. Name a model that an OpenAI, Azure or OpenAI-compatible provider serves.`, { param: 'model' })
    }
    throw new GatewayError('model_not_served', `No provider can serve model "${request.model}".`, { param: 'model' })
  }
  throw toGatewayError(primaryFailure, attempts, context)
}

async function serveTarget(
  components: EngineComponents,
  plan: RequestPlan,
  target: PlannedTarget,
  request: ChatRequest,
  caller: Cancellation,
  attempts: AttemptRecord[],
): Promise<Served | TargetFailure> {
  const { router } = components
  const log = plan.context.log
  const keyPlan = router.keyPlan(target, log)
  const keys = keyPlan.keys
  const rotation = createKeyRotation({ weights: keyPlan.weights, policy: target.provider.policy, random: components.random, unavailable: keyPlan.unavailable, first: keyPlan.first })
  let step = rotation.first()
  let last: AttemptFailure | null = null
  let key: ProviderKey | null = null
  while (step.kind === 'attempt') {
    if (step.delayMs > 0) {
      try {
        await components.sleep(step.delayMs, caller)
      } catch {
        return { reason: 'cancelled', last, target, key }
      }
    }
    key = keys[step.keyIndex]!
    const started = components.now()
    router.attemptStarted(target, key)
    let run
    try {
      run = await runAttempt(target.provider, request.body, target.model, key, caller, request.surface)
    } catch (error) {
      // Never sent (the body cannot be said in this provider's format): nothing to report.
      router.attemptFinished(target, key, started, { failureClass: 'cancelled', scope: 'model', status: 0, waitHintMs: null, message: 'not sent', code: null }, log)
      throw error
    }
    const result = run.result
    const failure = result.ok ? null : result.failure
    // A JSON answer's token counts let the balancer tell a long completion from a slow provider.
    router.attemptFinished(target, key, started, failure, log, result.ok ? result.headers : undefined, result.ok && result.kind === 'json' ? readUsage(result) : null)
    attempts.push({
      provider: target.provider.name,
      model: target.model,
      key_id: key.id,
      key_name: key.name,
      status: result.ok ? result.status : result.failure.status,
      failure_class: failure?.failureClass ?? null,
      latency_ms: components.now() - started,
      wait_hint_ms: failure?.waitHintMs ?? null,
    })
    if (result.ok) {
      router.served(plan, target, key)
      const extraFields: ExtraFields = { provider: target.provider.name, model: target.model, key_id: key.id, key_name: key.name, attempts, request_id: plan.context.requestId }
      if (log.enabled) extraFields.routing_log = log.lines
      return { success: result, extraFields, upstream: run }
    }
    last = result.failure
    step = rotation.next(result.failure)
  }
  return { reason: step.reason, last, target, key }
}

/** Maps how the primary (or a caller fault) ended to the error the caller gets. */
function toGatewayError(failure: TargetFailure, attempts: AttemptRecord[], context: RequestContext): GatewayError {
  const { target, last, key } = failure
  const provider = target.provider.name
  const where = `${provider}/${target.model}`
  const extraFields: ExtraFields = { provider, model: target.model, key_id: key?.id ?? null, key_name: key?.name ?? null, attempts, request_id: context.requestId }
  if (context.log.enabled) extraFields.routing_log = context.log.lines
  const tries = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`
  const said = last ? ` The provider said: ${last.message}` : ''
  switch (failure.reason) {
    case 'no_keys':
      return new GatewayError('model_not_served', `Provider "${provider}" has no key that serves model "${target.model}". Add the model to a key's "models", or use another provider.`, { param: 'model', extraFields })
    case 'caller_fault':
      return new GatewayError('upstream_rejected_request', last?.message ?? `${where} rejected the request.`, { status: last && last.status >= 400 && last.status < 500 ? last.status : 400, extraFields })
    case 'credentials_exhausted':
      return new GatewayError('upstream_credentials_exhausted', `Every key of ${provider} that serves ${target.model} was refused by the provider (${tries}); the provider credentials, not your gateway key, need attention.${said}`, { extraFields })
    case 'cancelled':
      return new GatewayError('client_closed_request', 'The client closed the request.', { extraFields })
    case 'retries_exhausted':
      break
  }
  const failureClass = last?.failureClass
  if (failureClass === 'rate_limit') return new GatewayError('upstream_rate_limited', `${where} is rate limiting every key tried (${tries}).${said}`, { extraFields })
  if (failureClass === 'timeout') return new GatewayError('upstream_timeout', `${where} did not answer in time (${tries}).${said}`, { extraFields })
  if (last && last.status === 0) return new GatewayError('upstream_unavailable', `${where} could not be reached (${tries}).${said}`, { extraFields })
  const status = last && last.status >= 500 && last.status < 600 ? last.status : 502
  return new GatewayError('upstream_error', `${where} failed (${tries}).${said}`, { status, extraFields })
}
