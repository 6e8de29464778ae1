import { EventEmitter } from 'node:events'
import type { ServerResponse } from 'node:http'
import { describe, expect, it } from 'vitest'
import type { DirectionDecision } from '@switchboard/routing'
import type { RequestRecord } from '@switchboard/history'
import { StreamUsage } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'
import type { Served } from '../inference/engine.ts'
import { RoutingLog } from '@switchboard/routing'
import { buildRequestRecord, createRequestRecorder, RequestTrack } from './request-record.ts'
import { scrubSecrets } from './scrub.ts'

const AT = Date.UTC(2026, 11, 1, 12, 0, 0)
const context = (finished = true) => ({ nodeId: 'node-1', region: 'eu', endedAt: AT + 120, finished, secrets: () => ['sk-live-secret-value-1234'] })

function rerouted(): DirectionDecision {
  const azure = { provider: 'azure', model: 'gpt-4o' }
  return { primary: azure, fallbacks: [], reason: 'pinned_rerouted', pinned: { provider: 'openai', model: 'gpt-4o' }, appended: [], pruned: [], skipped: [{ provider: 'openai', model: 'gpt-4o' }], score: 0.9 }
}

function servedBy(provider: string, keyId: string, keyName: string, attempts: Served['extraFields']['attempts']): Served {
  return {
    success: { ok: true, kind: 'json', status: 200, headers: {}, bytes: Buffer.from('{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42}}'), usage: { promptTokens: 12, completionTokens: 30 }, rateLimit: null },
    extraFields: { provider, model: 'gpt-4o', key_id: keyId, key_name: keyName, attempts, request_id: 'id' },
    upstream: { abort() {} },
  }
}

describe('the per-request record', () => {
  it('says a pinned request was moved off its failing provider, with the key used and the held key skipped', () => {
    const track = new RequestTrack('0192-id', 'chat_completions', AT, false, () => AT)
    const log = new RoutingLog(false, true)
    log.decision = rerouted()
    log.plan = { targets: [{ provider: 'azure', model: 'gpt-4o', source: 'primary', direct: false, firstKeyId: undefined, firstIsCheck: false }], primary: 0, pickedBy: 'routing', reason: 'pinned_rerouted', movedOff: { provider: 'openai', reason: 'failed' }, check: null, session: 'none' }
    log.skipped = [{ provider: 'azure', model: 'gpt-4o', keyId: 'az-1', keyName: 'eu-key-1', reason: 'rate_limit' }]
    log.add('Skipping 1 of 2 keys for azure/gpt-4o that the provider refused')
    track.asked = { model: 'openai/gpt-4o', fallbacks: [], stream: false, sessionId: 's-1', directKey: false }
    track.log = log
    track.served = servedBy('azure', 'az-2', 'eu-key-2', [{ provider: 'azure', model: 'gpt-4o', key_id: 'az-2', key_name: 'eu-key-2', status: 200, failure_class: null, latency_ms: 80, wait_hint_ms: null }])
    const record = buildRequestRecord(track, context())
    expect(record).toMatchObject({
      id: '0192-id',
      at: new Date(AT).toISOString(),
      node_id: 'node-1',
      region: 'eu',
      requested: { provider: 'openai', model: 'gpt-4o', fallbacks: [], session_id: 's-1' },
      served: { provider: 'azure', model: 'gpt-4o', key_id: 'az-2', key_name: 'eu-key-2' },
      status: 200,
      failure_class: null,
      latency_ms: 120,
      ttft_ms: null,
      usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 },
      stream: false,
      gateway_key: null,
      content: null,
      routing: {
        picked_by: 'routing',
        moved_off: { provider: 'openai', reason: 'failed' },
        skipped_keys: [{ provider: 'azure', model: 'gpt-4o', key_id: 'az-1', key_name: 'eu-key-1', reason: 'rate_limit' }],
        check: null,
        added_fallback_served: false,
        session_kept: null,
        pinned_kept_failed: false,
      },
    })
    // The provider decision's sentence is built after the answer, before the router's own lines.
    expect(record.routing.log[0]).toMatch(/Provider azure for gpt-4o: the provider the request named is failed: re-routed/)
    expect(record.routing.log.at(-1)).toMatch(/Skipping 1 of 2 keys/)
  })

  it('reports the check of a held key with its outcome, and a fallback routing added', () => {
    const track = new RequestTrack('id-2', 'chat_completions', AT, false, () => AT)
    const log = new RoutingLog(false, true)
    const openai = { provider: 'openai', model: 'gpt-4o' }
    const azure = { provider: 'azure', model: 'gpt-4o' }
    log.decision = { primary: openai, fallbacks: [azure], reason: 'scored', pinned: null, appended: [azure], pruned: [], skipped: [], score: 1 }
    log.plan = { targets: [{ ...openai, source: 'primary', direct: false, firstKeyId: undefined, firstIsCheck: false }, { ...azure, source: 'added', direct: false, firstKeyId: undefined, firstIsCheck: false }], primary: 0, pickedBy: 'routing', reason: 'scored', movedOff: null, check: null, session: 'moved_key_unavailable' }
    log.check = { provider: 'openai', model: 'gpt-4o', keyId: 'oa-2' }
    log.session = 'moved_key_unavailable'
    track.asked = { model: 'gpt-4o', fallbacks: [], stream: false, sessionId: 's', directKey: false }
    track.log = log
    track.served = servedBy('azure', 'az-1', 'eu-key-1', [
      { provider: 'openai', model: 'gpt-4o', key_id: 'oa-2', key_name: 'prod-2', status: 401, failure_class: 'credential', latency_ms: 5, wait_hint_ms: null },
      { provider: 'azure', model: 'gpt-4o', key_id: 'az-1', key_name: 'eu-key-1', status: 200, failure_class: null, latency_ms: 50, wait_hint_ms: null },
    ])
    const record = buildRequestRecord(track, context())
    expect(record.routing.check).toEqual({ key_id: 'oa-2', key_name: 'prod-2', provider: 'openai', model: 'gpt-4o', outcome: 'refused_again' })
    expect(record.routing.added_fallback_served).toBe(true)
    expect(record.routing.picked_by).toBe('routing')
    expect(record.routing.session_kept).toBe(false)
  })

  it('records an error with its class and a message cleaned of key values', () => {
    const track = new RequestTrack('id-3', 'chat_completions', AT, true, () => AT)
    track.asked = { model: 'openai/gpt-4o', fallbacks: ['azure/gpt-4o'], stream: false, sessionId: null, directKey: true, body: '{"model":"openai/gpt-4o"}' }
    const error = new GatewayError('upstream_credentials_exhausted', 'Every key was refused. The provider said: Incorrect API key provided: sk-live-secret-value-1234.', {
      extraFields: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'prod-1', attempts: [{ provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'prod-1', status: 401, failure_class: 'credential', latency_ms: 3, wait_hint_ms: null }], request_id: 'id-3' },
    })
    track.error = error
    const record = buildRequestRecord(track, context())
    expect(record.status).toBe(502)
    expect(record.failure_class).toBe('credential')
    expect(record.message).not.toContain('sk-live-secret-value-1234')
    expect(record.message).toContain('[redacted]')
    expect(record.routing.picked_by).toBe('caller')
    expect(record.content?.request).toBe('{"model":"openai/gpt-4o"}')
    expect(JSON.stringify(record)).not.toContain('sk-live-secret-value-1234')
  })

  it('classes a validation error as a caller fault and a caller who went away as cancelled', () => {
    const invalid = new RequestTrack('id-4', 'chat_completions', AT, false, () => AT)
    invalid.error = new GatewayError('invalid_json', 'The request body is not valid JSON')
    expect(buildRequestRecord(invalid, context())).toMatchObject({ status: 400, failure_class: 'caller_fault', requested: { provider: null, model: '' }, served: { provider: null } })
    const gone = new RequestTrack('id-5', 'chat_completions', AT, false, () => AT)
    gone.asked = { model: 'gpt-4o', fallbacks: [], stream: true, sessionId: null, directKey: false }
    expect(buildRequestRecord(gone, context(false))).toMatchObject({ status: 499, failure_class: 'cancelled', stream: true })
  })

  it('reads a stream: time to first chunk, and the usage its events reported, a continuation added to what it continued', () => {
    let clock = AT
    const track = new RequestTrack('id-6', 'chat_completions', AT, false, () => clock)
    track.asked = { model: 'gpt-4o', fallbacks: [], stream: true, sessionId: null, directKey: false }
    const streamed = (provider: string, events: string[]): Served => {
      const served = servedBy(provider, `${provider}-1`, 'prod-1', [])
      served.success = { ok: true, kind: 'stream', status: 200, headers: {}, rateLimit: null, events: (async function* () {})() }
      served.streamUsage = new StreamUsage()
      for (const data of events) served.streamUsage.read(data)
      return served
    }
    const served = streamed('openai', ['{"choices":[{"delta":{"content":"hi"}}]}', '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}'])
    track.served = served
    clock += 35
    track.chunk('{"choices":[{"delta":{"content":"hi"}}]}')
    clock += 10
    track.chunk('{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}')
    const record = buildRequestRecord(track, context())
    expect(record.ttft_ms).toBe(35)
    expect(record.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })
    // Continued on Anthropic: both parts were billed, and the record names what served the end.
    const continuation = streamed('anthropic', ['{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}', '{"type":"message_delta","usage":{"output_tokens":6}}'])
    continuation.previous = served
    track.continued(continuation)
    expect(buildRequestRecord(track, context())).toMatchObject({ usage: { prompt_tokens: 8, completion_tokens: 10, total_tokens: 18 }, served: { provider: 'anthropic' } })
  })
})

/** A response that closes when told to, finished or not. */
function response(): ServerResponse & { closeNow(finished: boolean): void } {
  const emitter = new EventEmitter() as EventEmitter & { writableFinished: boolean; closeNow(finished: boolean): void }
  emitter.writableFinished = false
  emitter.closeNow = (finished) => {
    emitter.writableFinished = finished
    emitter.emit('close')
  }
  return emitter as unknown as ServerResponse & { closeNow(finished: boolean): void }
}

describe('the request recorder', () => {
  it('builds no record while only a track listener (history) listens: no content kept, the routing log keeps no facts for it', () => {
    let clock = AT
    let secretsRead = 0
    const recorder = createRequestRecorder({ now: () => clock, secrets: () => (secretsRead++, ['sk-live-secret-value-1234']), recordContent: () => true }, { nodeId: 'node-1', region: 'eu' })
    expect(recorder.active).toBe(false)
    const seen: { track: RequestTrack; finished: boolean; endedAt: number }[] = []
    const off = recorder.onTrack((track, finished, endedAt) => seen.push({ track, finished, endedAt }))
    expect(recorder.active).toBe(true)
    const outgoing = response()
    const track = recorder.track(outgoing, 'chat_completions', AT, 'id-7')
    expect(track.recorded).toBe(false)
    expect(track.content).toBe(false)
    track.error = new GatewayError('invalid_json', 'The request body is not valid JSON: sk-live-secret-value-1234')
    clock = AT + 40
    outgoing.closeNow(true)
    expect(seen).toEqual([{ track, finished: true, endedAt: AT + 40 }])
    // No record was built: the secrets (read to clean a record's message) were never asked for.
    expect(secretsRead).toBe(0)
    off()
    expect(recorder.active).toBe(false)
  })

  it('builds the record for record listeners and hands the same track to light listeners, each once', () => {
    const recorder = createRequestRecorder({ now: () => AT + 5, secrets: () => [], recordContent: () => true }, { nodeId: 'node-1', region: 'eu' })
    const records: RequestRecord[] = []
    const tracks: [RequestTrack, boolean][] = []
    recorder.on((record) => records.push(record))
    recorder.onTrack((track, finished) => tracks.push([track, finished]))
    const outgoing = response()
    const track = recorder.track(outgoing, 'chat_completions', AT, 'id-8')
    expect(track.recorded).toBe(true)
    expect(track.content).toBe(true)
    track.asked = { model: 'gpt-4o', fallbacks: [], stream: true, sessionId: null, directKey: false }
    outgoing.closeNow(false)
    expect(tracks).toEqual([[track, false]])
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ id: 'id-8', status: 499, failure_class: 'cancelled', latency_ms: 5 })
  })

  it('reports a listener that throws and still calls the others', () => {
    const errors: unknown[] = []
    const recorder = createRequestRecorder({ now: () => AT, secrets: () => [], recordContent: () => false, onListenerError: (error) => errors.push(error) }, { nodeId: 'n', region: 'r' })
    let records = 0
    recorder.onTrack(() => {
      throw new Error('history broke')
    })
    recorder.on(() => records++)
    const outgoing = response()
    recorder.track(outgoing, 'chat_completions', AT, 'id-9')
    outgoing.closeNow(true)
    expect(errors).toHaveLength(1)
    expect(records).toBe(1)
  })
})

describe('scrubSecrets', () => {
  it('removes configured values and key-shaped tokens', () => {
    expect(scrubSecrets('key abcdefgh-value-9 was refused', ['abcdefgh-value-9'])).toBe('key [redacted] was refused')
    expect(scrubSecrets('Incorrect API key provided: sk-proj-abc123def456', [])).toBe('Incorrect API key provided: [redacted]')
    expect(scrubSecrets('Authorization: Bearer abcdefghijkl', [])).toBe('Authorization: Bearer [redacted]')
    expect(scrubSecrets('a short word', ['word'])).toBe('a short word')
  })
})
