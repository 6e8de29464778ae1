import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, type Simulator } from '../index.ts'
import { control, eventually, send } from '../../test/client.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator() })
afterAll(() => simulator.close())
beforeEach(() => { simulator.clearRules(); simulator.resetRequests() })

describe('connection faults', () => {
  it('reset drops the connection before any answer', async () => {
    simulator.setRules([{ fault: 'reset' }])
    await expect(send(simulator, 'openai')).rejects.toThrow()
    const record = await eventually(() => simulator.requests(), (records) => records.length === 1)
    expect(record[0]).toMatchObject({ status: 0, aborted: false, fault: 'reset' })
  })

  it('timeout holds the request until after_ms, then drops it', async () => {
    simulator.setRules([{ fault: { preset: 'timeout', after_ms: 30 } }])
    await expect(send(simulator, 'anthropic')).rejects.toThrow()
    const records = await eventually(() => simulator.requests(), (list) => list.length === 1)
    expect(records[0]).toMatchObject({ status: 0, fault: 'timeout', aborted: false })
  })

  it('timeout without after_ms holds until the client gives up, which counts as aborted', async () => {
    simulator.setRules([{ fault: 'timeout' }])
    const abort = new AbortController()
    const pending = send(simulator, 'azure', { signal: abort.signal })
    await eventually(() => control(simulator, 'GET', '/_sim/stats'), (stats) => stats.json.in_flight === 1)
    abort.abort()
    await expect(pending).rejects.toThrow()
    const records = await eventually(() => simulator.requests(), (list) => list.length === 1)
    expect(records[0]).toMatchObject({ provider: 'azure', status: 0, aborted: true })
  })

  it('stream_cut sends part of the stream, then drops the connection', async () => {
    simulator.setRules([{ fault: 'stream_cut', completion_tokens: 200 }])
    const response = await send(simulator, 'openai', { body: { stream: true } })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toContain('chat.completion.chunk')
    let text = ''
    await expect((async () => {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        text += new TextDecoder().decode(value)
      }
    })()).rejects.toThrow()
    expect(text).not.toContain('[DONE]')
    const records = await eventually(() => simulator.requests(), (list) => list.length === 1)
    expect(records[0]).toMatchObject({ status: 200, stream: true, aborted: false, fault: 'stream_cut' })
  })

  it('stream_cut on a non-stream request cuts the JSON body', async () => {
    simulator.setRules([{ fault: 'stream_cut' }])
    const response = await send(simulator, 'anthropic')
    expect(response.status).toBe(200)
    await expect(response.text()).rejects.toThrow()
  })

  it('a client that leaves mid-stream is recorded as aborted and its timers stop', async () => {
    simulator.setRules([{ chunk_delay_ms: 50, completion_tokens: 400 }])
    const abort = new AbortController()
    const response = await send(simulator, 'anthropic', { body: { stream: true }, signal: abort.signal })
    const reader = response.body!.getReader()
    await reader.read()
    abort.abort()
    const records = await eventually(() => simulator.requests(), (list) => list.length === 1)
    expect(records[0]).toMatchObject({ provider: 'anthropic', status: 200, stream: true, aborted: true })
    expect((await control(simulator, 'GET', '/_sim/stats')).json).toMatchObject({ in_flight: 0, aborted: 1 })
  })
})
