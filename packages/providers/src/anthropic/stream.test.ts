import { describe, expect, it } from 'vitest'
import { UpstreamStreamError } from '../http/stream-failure.ts'
import { TranslationError } from './errors.ts'
import type { SseMessage as ServerSentEvent } from '../http/sse.ts'
import { anthropicStreamToOpenAI } from './stream.ts'

const INIT = { model: 'anthropic/claude-sonnet-4-5', createdSeconds: 1_760_000_000 }

/** Splits a recorded SSE body into events; enough for these fixtures (one data line each). */
async function * sse (recorded: string): AsyncGenerator<ServerSentEvent> {
  for (const frame of recorded.trim().split(/\n\n+/)) {
    const lines = frame.split('\n')
    const event = lines.find((line) => line.startsWith('event: '))?.slice('event: '.length)
    const data = lines.find((line) => line.startsWith('data: '))?.slice('data: '.length) ?? ''
    yield { event, data }
  }
}

async function collect (events: AsyncIterable<ServerSentEvent>): Promise<unknown[]> {
  const chunks: unknown[] = []
  for await (const text of anthropicStreamToOpenAI(events, INIT)) chunks.push(JSON.parse(text))
  return chunks
}

/** The chunks produced before the stream threw, and what it threw. */
async function collectUntilThrow (events: AsyncIterable<ServerSentEvent>): Promise<{ chunks: unknown[], error: unknown }> {
  const chunks: unknown[] = []
  try {
    for await (const text of anthropicStreamToOpenAI(events, INIT)) chunks.push(JSON.parse(text))
  } catch (error) {
    return { chunks, error }
  }
  throw new Error('expected the stream to throw')
}

function chunk (id: string, delta: Record<string, unknown>, finishReason: string | null = null): unknown {
  return {
    id, object: 'chat.completion.chunk', created: INIT.createdSeconds, model: INIT.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  }
}

function usageChunk (id: string, prompt: number, completion: number): unknown {
  return {
    id, object: 'chat.completion.chunk', created: INIT.createdSeconds, model: INIT.model, choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, prompt_tokens_details: { cached_tokens: 0 } },
  }
}

const TEXT_STREAM = `
event: message_start
data: {"type": "message_start", "message": {"id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}

event: content_block_start
data: {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}

event: content_block_delta
data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}}

event: content_block_stop
data: {"type": "content_block_stop", "index": 0}

event: message_delta
data: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence":null}, "usage": {"output_tokens": 15}}

event: message_stop
data: {"type": "message_stop"}
`

const TOOL_STREAM = `
event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", let's check the weather for San Francisco, CA:"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \\"San Francisco, CA\\", \\"unit\\": \\"fahrenheit\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}
`

describe('anthropicStreamToOpenAI', () => {
  it('translates a text stream into role, content, finish and usage chunks', async () => {
    const id = 'msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY'
    expect(await collect(sse(TEXT_STREAM))).toEqual([
      chunk(id, { role: 'assistant', content: '' }),
      chunk(id, { content: 'Hello' }),
      chunk(id, { content: '!' }),
      chunk(id, {}, 'stop'),
      usageChunk(id, 25, 15),
    ])
  })

  it('translates a tool call, numbering it by tool calls rather than content blocks', async () => {
    const id = 'msg_014p7gG3wDgGV9EUtLvnow3U'
    expect(await collect(sse(TOOL_STREAM))).toEqual([
      chunk(id, { role: 'assistant', content: '' }),
      chunk(id, { content: 'Okay' }),
      chunk(id, { content: ', let\'s check the weather for San Francisco, CA:' }),
      chunk(id, { tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk(id, { tool_calls: [{ index: 0, function: { arguments: '{"location":' } }] }),
      chunk(id, { tool_calls: [{ index: 0, function: { arguments: ' "San Francisco, CA", "unit": "fahrenheit"}' } }] }),
      chunk(id, {}, 'tool_calls'),
      usageChunk(id, 472, 89),
    ])
  })

  it('gives parallel tool calls indexes 0 and 1 and routes each block\'s arguments to its own call', async () => {
    const events: ServerSentEvent[] = [
      { event: undefined, data: '{"type":"message_start","message":{"id":"msg_p","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}' },
      { event: undefined, data: '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}' },
      { event: undefined, data: '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}' },
      { event: undefined, data: '{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"zone\\":\\"UTC\\"}"}}' },
      { event: undefined, data: '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}' },
      { event: undefined, data: '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}' },
      { event: undefined, data: '{"type":"message_stop"}' },
    ]
    const chunks = await collect((async function * () { yield * events })()) as Array<{ choices: Array<{ delta: { tool_calls?: unknown } }>, usage?: unknown }>
    expect(chunks.map((entry) => entry.choices[0]?.delta.tool_calls).filter(Boolean)).toEqual([
      [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'get_weather', arguments: '' } }],
      [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'get_time', arguments: '' } }],
      [{ index: 1, function: { arguments: '{"zone":"UTC"}' } }],
      [{ index: 0, function: { arguments: '{}' } }],
    ])
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 15, completion_tokens: 30, total_tokens: 45, prompt_tokens_details: { cached_tokens: 5 } })
  })

  it('skips thinking deltas', async () => {
    const events = sse(`
event: message_start
data: {"type":"message_start","message":{"id":"msg_t","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me work this out."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"42"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":7}}

event: message_stop
data: {"type":"message_stop"}
`)
    const chunks = await collect(events)
    expect(chunks.slice(1, -1)).toEqual([chunk('msg_t', { content: '42' }), chunk('msg_t', {}, 'length')])
  })

  it('throws UpstreamStreamError with the provider\'s words on an error event, after what came before', async () => {
    const recorded = TEXT_STREAM.split('event: content_block_stop')[0] + `
event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
`
    const { chunks, error } = await collectUntilThrow(sse(recorded))
    expect(chunks).toHaveLength(3)
    expect(error).toBeInstanceOf(UpstreamStreamError)
    expect(error).toMatchObject({ providerCode: 'overloaded_error', message: 'Overloaded' })
  })

  it('refuses a stream cut off before message_stop instead of ending it as complete', async () => {
    const recorded = TEXT_STREAM.split('event: message_delta')[0] ?? ''
    const { chunks, error } = await collectUntilThrow(sse(recorded))
    expect(chunks).toHaveLength(3)
    expect(error).toBeInstanceOf(TranslationError)
    expect(error).toMatchObject({ code: 'upstream_malformed' })
  })

  it('refuses data that is not JSON', async () => {
    const { error } = await collectUntilThrow(sse('event: message_start\ndata: {"type": "message_st'))
    expect(error).toMatchObject({ code: 'upstream_malformed' })
  })
})
