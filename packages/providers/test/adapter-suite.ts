/**
 * THE shared adapter suite: the same cases, run against the simulator, for every adapter.
 *
 * How to add an adapter (see src/adapters.test.ts for the list every adapter is in):
 *
 *   import { adapterSuite } from '../test/adapter-suite.ts'
 *   adapterSuite({
 *     label: 'vertex',                       // test names read "adapter vertex: ..."
 *     dialect: 'vertex',                     // the simulator dialect (ProviderName) it talks to
 *     create: (baseUrl) => createVertexAdapter({ name: 'vertex', type: 'vertex', network: suiteNetwork(baseUrl) }),
 *     key: { id: 'k1', name: 'k1', value: '...', models: ['*'], weight: 1 },
 *     model: 'gemini-2.5-pro',
 *     inexpressible: { n: 2 },               // a chat body this provider cannot be sent, or null + reason
 *   })
 *
 * Every case is an `it` in one `describe`; a case the dialect cannot show yet is declared
 * with a reason (`streams: 'ConverseStream is not simulated yet'`) and is skipped with that
 * reason in its name, never silently. The cases:
 *   - success: one JSON outcome in chat.completion shape, with `usage` and `rateLimit` read by the adapter;
 *   - usage: the simulator's exact token counts;
 *   - stream: chunks in order, the usage chunk when asked, and an end that completes;
 *   - rate-limit headers: a key whose window is spent comes back with `rateLimit` set (JSON and stream);
 *   - each failure class: the simulator's presets, each with the provider's own words, status, class and scope;
 *   - malformed 200: `unknown`, scope model, status 200 (every adapter alike);
 *   - mid-stream failure: `events` rejects with a StreamFailure (`transient`, status 200) after some chunks;
 *   - in-band stream error: the same, with the provider's words;
 *   - inexpressible body: `notSent` (a 400 for the caller) and nothing reaches the simulator;
 *     and a surface the adapter cannot serve is `notSent` through `sendSurface` too.
 */
import { createSimulator, type FaultPreset, type ProviderName, type Simulator, type SimulatorRule } from '@switchboard/simulator'
import type { FailureClass, FailureScope } from '@switchboard/routing'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { Cancellation } from '../src/http/cancellation.ts'
import { StreamFailure } from '../src/http/stream-failure.ts'
import { canServe, sendSurface } from '../src/surfaces/index.ts'
import type { AttemptResult, ChatRequestBody, JsonSuccess, ProviderNetwork, ProviderAdapter, ProviderKey, StreamSuccess, Surface } from '../src/types.ts'

/** One adapter as the suite runs it. */
export interface AdapterUnderTest {
  /** Names the describe block: "adapter <label>". */
  label: string
  /** The simulator dialect the adapter talks to. */
  dialect: ProviderName
  /** The adapter, pointed at the simulator's base URL (`suiteNetwork(baseUrl)` gives a network config). */
  create(baseUrl: string): ProviderAdapter
  /** A key the simulator accepts. */
  key: ProviderKey
  /** The key as the simulator's rules and records see it (a SigV4 key's access key id); default `key.value`. */
  wireKey?: string
  /** The model to ask for. */
  model: string
  /** A chat body this provider cannot be sent (merged into a valid body); or a string saying why there is none. */
  inexpressible: Partial<ChatRequestBody> | string
  /** Set to the reason when the simulator cannot stream this dialect yet (skips stream and mid-stream cases). */
  streams?: string
  /** Set to the reason when the simulator's dialect has no in-band stream error (`stream_error` preset). */
  inBandStreamErrors?: string
  /** Set to the reason when the provider sends no rate-limit headers (the case then checks `rateLimit` stays null). */
  rateLimitHeaders?: string
  /** False when the provider's rate-limit answer carries no wait (no retry-after header or words). */
  waitHints?: false
  /** Where a provider classifies a preset differently from the common table, with why in a comment at the call site. */
  classes?: Partial<Record<FaultPreset, ExpectedFailure>>
}

/** What a failure preset must come back as. */
export interface ExpectedFailure {
  failureClass: FailureClass
  scope: FailureScope
}

/** The network config an adapter under test gets: the simulator as base URL, no retries, no extra headers. */
export function suiteNetwork(baseUrl: string): ProviderNetwork {
  return { base_url: baseUrl, default_request_timeout_in_seconds: 30, max_retries: 0, retry_backoff_initial: 100, retry_backoff_max: 1000, extra_headers: {} }
}

/** How each answer-shaped fault preset of the simulator must be classified (reference: "What holds a key"). */
export const EXPECTED_CLASSES: Readonly<Partial<Record<FaultPreset, ExpectedFailure>>> = {
  invalid_api_key: { failureClass: 'credential', scope: 'key' },
  insufficient_quota: { failureClass: 'quota', scope: 'key' },
  rate_limit: { failureClass: 'rate_limit', scope: 'model' },
  // "No such model" may be a name this key cannot see: not proof the model is gone for every key.
  model_not_found: { failureClass: 'model_access', scope: 'model' },
  model_access: { failureClass: 'model_access', scope: 'model' },
  model_deprecated: { failureClass: 'model_gone', scope: 'model' },
  region_blocked: { failureClass: 'region_blocked', scope: 'model' },
  server_error: { failureClass: 'transient', scope: 'model' },
  bad_gateway: { failureClass: 'transient', scope: 'model' },
  unavailable: { failureClass: 'transient', scope: 'model' },
  overloaded: { failureClass: 'transient', scope: 'model' },
  context_length_exceeded: { failureClass: 'context_length', scope: 'model' },
  bad_request: { failureClass: 'caller_fault', scope: 'model' },
}

/** Registers the suite's cases for one adapter. */
export function adapterSuite(subject: AdapterUnderTest): void {
  describe(`adapter ${subject.label} (simulator dialect ${subject.dialect})`, () => {
    let simulator: Simulator
    let adapter: ProviderAdapter
    const wireKey = subject.wireKey ?? subject.key.value

    beforeAll(async () => {
      simulator = await createSimulator()
      adapter = subject.create(simulator.url)
    })
    afterAll(async () => {
      await adapter?.close()
      await simulator?.close()
    })
    beforeEach(() => {
      simulator.clearRules()
      simulator.resetRequests()
    })

    /** A rule for this adapter's dialect and key. */
    const rule = (fields: SimulatorRule): void => simulator.addRule({ provider: subject.dialect, key: wireKey, ...fields })

    const send = (body: Partial<ChatRequestBody> = {}): Promise<AttemptResult> =>
      adapter.send({
        body: { model: subject.model, messages: [{ role: 'user', content: 'Hello there, simulator.' }], max_tokens: 64, ...body },
        model: subject.model,
        key: subject.key,
        signal: new Cancellation(),
      })

    it('success: one JSON outcome in chat.completion shape, usage and rate-limit state read by the adapter', async () => {
      const result = await send()
      const success = json(result)
      const body = bodyOf(success)
      expect(body.object).toBe('chat.completion')
      expect(body.choices[0].message.role).toBe('assistant')
      expect(typeof body.choices[0].message.content).toBe('string')
      expect(body.choices[0].message.content.length).toBeGreaterThan(0)
      expect(body.choices[0].finish_reason).toBe('stop')
      expect(success.status).toBe(200)
      expect(success.usage).not.toBeNull()
      expect(success.usage!.promptTokens).toBeGreaterThan(0)
      // No rule limits the key: whatever the headers say, the window is not spent.
      expect(success.rateLimit).toBeNull()
      expect(simulator.requests()).toMatchObject([{ provider: subject.dialect, key: wireKey, status: 200 }])
    })

    it('usage: the exact token counts the upstream reported', async () => {
      rule({ completion_tokens: 7 })
      const success = json(await send())
      expect(success.usage).toEqual({ promptTokens: bodyOf(success).usage.prompt_tokens, completionTokens: 7 })
    })

    it.skipIf(subject.streams !== undefined)(`stream: chunks in order, the usage chunk when asked, an end that completes${skipped(subject.streams)}`, async () => {
      rule({ completion_tokens: 12 })
      const stream = streamed(await send({ stream: true, stream_options: { include_usage: true } }))
      expect(stream.status).toBe(200)
      // Azure's content-filter annotations (`prompt_filter_results`, no `object`) are passed through as they come.
      const chunks = (await collect(stream)).filter((chunk) => chunk.prompt_filter_results === undefined)
      expect(chunks.length).toBeGreaterThan(2)
      for (const chunk of chunks) expect(chunk.object).toBe('chat.completion.chunk')
      const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')
      expect(text.length).toBeGreaterThan(0)
      expect(chunks.some((chunk) => chunk.choices[0]?.finish_reason === 'stop')).toBe(true)
      const last = chunks.at(-1)!
      expect(last.choices).toEqual([])
      expect(last.usage.completion_tokens).toBe(12)
      // Without include_usage, no usage chunk (OpenAI's behaviour).
      const plain = (await collect(streamed(await send({ stream: true })))).filter((chunk) => chunk.prompt_filter_results === undefined)
      expect(plain.every((chunk) => chunk.choices.length > 0)).toBe(true)
    })

    it(`rate-limit headers: a spent window comes back as the key's rate-limit state${subject.rateLimitHeaders === undefined ? '' : ` (none: ${subject.rateLimitHeaders})`}`, async () => {
      // One request a minute: the first is served and leaves none.
      rule({ rpm: 1 })
      const before = Date.now()
      const success = json(await send())
      if (subject.rateLimitHeaders !== undefined) {
        expect(success.rateLimit).toBeNull()
        return
      }
      expect(success.rateLimit).toMatchObject({ window: 'requests', remaining: 0 })
      expect(success.rateLimit!.untilMs).toBeGreaterThan(before)
      expect(success.rateLimit!.untilMs).toBeLessThanOrEqual(Date.now() + 61_000)
      if (subject.streams !== undefined) return
      // A new rule is a new window (the simulator's): one request, taken by the stream.
      simulator.clearRules()
      rule({ rpm: 1 })
      const stream = streamed(await send({ stream: true }))
      await collect(stream)
      expect(stream.rateLimit).toMatchObject({ window: 'requests', remaining: 0 })
    })

    for (const [preset, common] of Object.entries(EXPECTED_CLASSES) as Array<[FaultPreset, ExpectedFailure]>) {
      const expected = subject.classes?.[preset] ?? common
      it(`failure ${preset}: ${expected.failureClass}, scope ${expected.scope}, status as sent, the provider's message`, async () => {
        rule({ fault: { preset, retry_after_s: 7 } })
        const failure = failed(await send())
        expect({ failureClass: failure.failureClass, scope: failure.scope }).toEqual(expected)
        expect(failure.status).toBe(simulator.requests().at(-1)!.status)
        expect(failure.status).toBeGreaterThanOrEqual(400)
        expect(failure.message).not.toMatch(/^HTTP \d+$/)
        if (preset === 'rate_limit' && subject.waitHints !== false) expect(failure.waitHintMs).toBe(7_000)
      })
    }

    for (const preset of ['server_error', 'rate_limit'] as const) {
      it(`failure ${preset} carries the provider's own words verbatim`, async () => {
        const words = `scripted words for ${preset} 7f3a`
        rule({ fault: { preset, message: words } })
        const failure = failed(await send())
        expect(failure.message).toContain(words)
        expect(failure.failureClass).toBe(subject.classes?.[preset]?.failureClass ?? EXPECTED_CLASSES[preset]!.failureClass)
      })
    }

    it('failure with no answer (connection reset): transient, status 0, no words of ours that could carry a URL', async () => {
      rule({ fault: 'reset' })
      const failure = failed(await send())
      expect(failure).toMatchObject({ failureClass: 'transient', scope: 'model', status: 0 })
      expect(failure.message).not.toContain(simulator.url)
    })

    for (const [what, body, contentType] of [
      ['an HTML page', '<html><body>502 Bad Gateway</body></html>', 'text/html'],
      ['truncated JSON', '{"id":"chatcmpl-1","choices":[{"index":0,', 'application/json'],
      ['JSON that is not an object', '[1,2,3]', 'application/json'],
    ] as const) {
      it(`malformed 200 (${what}): unknown, scope model, status 200`, async () => {
        rule({ fault: { status: 200, headers: { 'content-type': contentType }, body } })
        const failure = failed(await send())
        expect(failure).toMatchObject({ failureClass: 'unknown', scope: 'model', status: 200 })
        if (what !== 'JSON that is not an object') expect(failure.message).toMatch(/^The upstream answered 200 with a body that is not (JSON|a JSON object)$/)
      })
    }

    it.skipIf(subject.streams !== undefined)(`mid-stream failure: events reject with a StreamFailure (transient, status 200) after some chunks${skipped(subject.streams)}`, async () => {
      rule({ fault: 'stream_cut', completion_tokens: 40 })
      const failure = await brokenAfterSomeChunks(streamed(await send({ stream: true })))
      expect(failure).toMatchObject({ failureClass: 'transient', scope: 'model', status: 200 })
    })

    it.skipIf(subject.streams !== undefined)(`a stream stopped on our side mid-way: events reject as cancelled (nobody's fault), not as an upstream failure${skipped(subject.streams)}`, async () => {
      rule({ fault: 'stream_stall', completion_tokens: 40 })
      const signal = new Cancellation()
      const stream = streamed(await adapter.send({ body: { model: subject.model, messages: [{ role: 'user', content: 'Hello there, simulator.' }], max_tokens: 64, stream: true }, model: subject.model, key: subject.key, signal }))
      const events = stream.events[Symbol.asyncIterator]()
      expect((await events.next()).done).toBe(false)
      signal.abort()
      const failure = await brokenAfterSomeChunks({ ...stream, events: { [Symbol.asyncIterator]: () => events } })
      expect(failure).toMatchObject({ failureClass: 'cancelled', status: 200 })
      expect(signal.listenerCount('abort')).toBe(0)
    })

    it.skipIf(subject.streams !== undefined || subject.inBandStreamErrors !== undefined)(`in-band stream error: events reject with a StreamFailure carrying the provider's words${skipped(subject.streams ?? subject.inBandStreamErrors)}`, async () => {
      rule({ fault: { preset: 'stream_error', message: 'scripted in-band words 9c1d' }, completion_tokens: 40 })
      const failure = await brokenAfterSomeChunks(streamed(await send({ stream: true })))
      expect(failure).toMatchObject({ scope: 'model', status: 200 })
      expect(['transient', 'rate_limit']).toContain(failure.failureClass)
      expect(failure.message).toContain('scripted in-band words 9c1d')
    })

    it(`inexpressible body: notSent (the caller's 400) and nothing reaches the upstream${typeof subject.inexpressible === 'string' ? ` (no such chat body: ${subject.inexpressible})` : ''}`, async () => {
      if (typeof subject.inexpressible !== 'string') {
        const result = await send(subject.inexpressible)
        expect(result.ok).toBe(false)
        if (result.ok) return
        expect(result.notSent).toBe(true)
        expect(result.failure).toMatchObject({ failureClass: 'caller_fault', status: 400 })
        expect(result.failure.message.length).toBeGreaterThan(0)
      }
      // A surface the adapter serves neither natively nor by translation is not sent either.
      const surface = (['count_tokens', 'embeddings'] as const).find((candidate: Surface) => !canServe(adapter, candidate))
      if (surface !== undefined) {
        const result = await sendSurface(adapter, { surface, body: { model: subject.model, input: 'hi', messages: [] }, model: subject.model, key: subject.key, signal: new Cancellation(), stream: false, headers: {} })
        expect(result).toMatchObject({ ok: false, notSent: true, failure: { failureClass: 'caller_fault', status: 400 } })
      }
      expect(simulator.requests()).toEqual([])
    })
  })
}

function skipped(reason: string | undefined): string {
  return reason === undefined ? '' : ` (skipped: ${reason})`
}

/**
 * A parsed wire body: `any` on purpose, the cases check its shape with run-time assertions.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Wire = any

function json(result: AttemptResult): JsonSuccess {
  if (!result.ok || result.kind !== 'json') throw new Error(`expected a JSON success, got ${describeResult(result)}`)
  return result
}

function streamed(result: AttemptResult): StreamSuccess {
  if (!result.ok || result.kind !== 'stream') throw new Error(`expected a stream, got ${describeResult(result)}`)
  return result
}

function failed(result: AttemptResult) {
  if (result.ok) throw new Error(`expected a failure, got a ${result.kind} success`)
  expect(result.notSent).toBeUndefined()
  return result.failure
}

function bodyOf(success: JsonSuccess): Wire {
  return success.body ?? JSON.parse(success.bytes!.toString('utf8'))
}

/** Reads a stream that must break after at least one chunk; the failure it rejected with. */
async function brokenAfterSomeChunks(stream: StreamSuccess) {
  let seen = 0
  let caught: unknown = null
  try {
    for await (const _ of stream.events) seen++
  } catch (error) {
    caught = error
  }
  expect(seen).toBeGreaterThan(0)
  expect(caught).toBeInstanceOf(StreamFailure)
  return (caught as StreamFailure).failure
}

async function collect(stream: StreamSuccess): Promise<Wire[]> {
  const chunks: Wire[] = []
  for await (const event of stream.events) chunks.push(JSON.parse(event))
  return chunks
}

function describeResult(result: AttemptResult): string {
  if (result.ok) return `a ${result.kind} success`
  return `a failure ${JSON.stringify(result.failure)}`
}
