import { afterEach, describe, expect, it } from 'vitest'
import { SpanKind } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { AttemptEffects, AttemptFailure } from '@switchboard/routing'
import type { DispatchStep } from '../../dispatch/dispatcher.ts'
import { GatewayError } from '../../errors.ts'
import { createTracing, tracingFromEnv, tracingWanted, type Tracing } from './setup.ts'

const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
let exporter: InMemorySpanExporter
let tracing: Tracing

function setUp(content = false): void {
  exporter = new InMemorySpanExporter()
  tracing = createTracing({ processors: [new SimpleSpanProcessor(exporter)], nodeId: 'node-a', region: 'eu', content })
}

afterEach(async () => {
  await tracing?.shutdown()
})

/** An attempt as routing plans it, with only what the trace reads (the rest of a DispatchStep is never touched). */
function step(overrides: Partial<Record<string, unknown>> = {}): DispatchStep {
  const base = {
    kind: 'attempt',
    target: { provider: { name: 'openai', adapter: { type: 'openai' } }, model: 'gpt-4o' },
    index: 0,
    key: { id: 'k1', name: 'prod-1', value: 'sk-never-exported' },
    delayMs: 0,
    headersMs: 30_000,
    firstTokenMs: 5_000,
    idleMs: 10_000,
    skipped: [],
    continuable: false,
    check: false,
    trials: [],
  }
  return { ...base, ...overrides } as unknown as DispatchStep
}

function effects(failure: AttemptFailure | null, holds: AttemptEffects['holds'] = null): AttemptEffects {
  return { failure, holds, backoff: null, trials: [] }
}

const timeout: AttemptFailure = { failureClass: 'timeout', scope: 'model', status: 200, waitHintMs: null, message: 'no first token', code: 'first_token_timeout' }

describe('turning tracing on', () => {
  it('is off unless an OTLP endpoint is named, and off when the SDK is disabled or another exporter is asked for', () => {
    expect(tracingWanted({})).toBe(false)
    expect(tracingFromEnv({}, { nodeId: 'a', region: 'eu', log: () => {} })).toBeNull()
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true)
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true)
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' })).toBe(false)
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' })).toBe(false)
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true)
  })
})

describe('the spans of a request', () => {
  it('continues the caller\'s trace and sends each attempt\'s own span upstream', () => {
    setUp()
    const request = tracing.request({ traceparent: CALLER }, 'POST', '/v1/chat/completions', 'chat_completions')
    const attempt = request.attempt(step(), 'openai')
    expect(attempt.traceparent).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${attempt.span.spanContext().spanId}-01`)
    expect(attempt.origin).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: attempt.span.spanContext().spanId })
    attempt.reported(effects(null), 200, { promptTokens: 3, completionTokens: 5 })
    request.end()
    const [client, server] = exporter.getFinishedSpans()
    expect(server!.kind).toBe(SpanKind.SERVER)
    expect(server!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7')
    expect(client!.kind).toBe(SpanKind.CLIENT)
    expect(client!.parentSpanContext?.spanId).toBe(server!.spanContext().spanId)
    expect(client!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 3, 'gen_ai.usage.output_tokens': 5, 'switchboard.key_name': 'prod-1', 'gen_ai.response.model': 'gpt-4o' })
    expect(JSON.stringify(client!.attributes)).not.toContain('sk-never-exported')
  })

  it('starts a new trace when the caller\'s traceparent is malformed', () => {
    setUp()
    const request = tracing.request({ traceparent: 'garbage' }, 'POST', '/v1/messages', 'messages')
    request.end()
    const [server] = exporter.getFinishedSpans()
    expect(server!.parentSpanContext).toBeUndefined()
    expect(server!.attributes['switchboard.surface']).toBe('messages')
  })

  it('builds nothing for a trace the caller did not sample: no attributes, no origin to link to, the flag passed on', () => {
    setUp()
    const request = tracing.request({ traceparent: CALLER.replace(/-01$/, '-00') }, 'POST', '/v1/chat/completions', 'chat_completions')
    expect(request.recording).toBe(false)
    const attempt = request.attempt(step(), 'openai')
    expect(attempt.origin).toBeUndefined()
    expect(attempt.traceparent.endsWith('-00')).toBe(true)
    attempt.reported(effects(null), 200, null)
    request.end()
    expect(exporter.getFinishedSpans()).toEqual([])
  })

  it('marks a deadline that passed, a check and its outcome, and an attempt never sent', () => {
    setUp()
    const request = tracing.request({}, 'POST', '/v1/chat/completions', 'chat_completions')
    request.attempt(step({ check: true }), 'openai').reported(effects(timeout), 200, null)
    request.attempt(step({ index: 1, target: { provider: { name: 'claude', adapter: { type: 'anthropic' } }, model: 'haiku' } }), 'anthropic').abandoned('cancelled')
    request.failed(new GatewayError('upstream_timeout', 'slow', { extraFields: { attempts: [{ failure_class: 'timeout' }] } }))
    request.end()
    const [timedOut, abandoned, server] = exporter.getFinishedSpans()
    expect(timedOut!.events.map((event) => [event.name, event.attributes])).toEqual([
      ['switchboard.deadline.hit', { 'switchboard.deadline': 'first_token', 'switchboard.deadline_ms': 5_000 }],
      ['switchboard.check', { 'switchboard.provider': 'openai', 'switchboard.key_name': 'prod-1', 'switchboard.check.outcome': 'no_change' }],
    ])
    expect(timedOut!.attributes).toMatchObject({ 'switchboard.check': true, 'switchboard.failure_class': 'timeout', 'error.type': 'timeout' })
    expect(abandoned!.attributes).toMatchObject({ 'switchboard.abandoned': 'cancelled', 'gen_ai.provider.name': 'anthropic' })
    expect(server!.events.map((event) => event.name)).toEqual(['switchboard.fallback'])
    expect(server!.attributes).toMatchObject({ 'error.type': 'upstream_timeout', 'http.response.status_code': 504, 'switchboard.failure_class': 'timeout' })
  })

  it('records the caller\'s body only when content recording is on', () => {
    setUp(false)
    const off = tracing.request({}, 'POST', '/v1/chat/completions', 'chat_completions')
    off.asked('r1', 'gpt-4o', [], false, () => '{"messages":"secret prompt"}')
    off.end()
    expect(exporter.getFinishedSpans()[0]!.attributes['switchboard.request.body']).toBeUndefined()
    void tracing.shutdown()
    setUp(true)
    const on = tracing.request({}, 'POST', '/v1/chat/completions', 'chat_completions')
    on.asked('r2', 'gpt-4o', ['anthropic/haiku'], true, () => '{"messages":"a prompt"}')
    on.end()
    expect(exporter.getFinishedSpans()[0]!.attributes).toMatchObject({ 'switchboard.request.body': '{"messages":"a prompt"}', 'switchboard.fallbacks': ['anthropic/haiku'], 'switchboard.stream': true })
  })
})
