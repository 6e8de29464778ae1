import { describe, expect, it } from 'vitest'
import { readUsage, StreamUsage, usageOf } from './usage.ts'

const bytes = (text: string) => Buffer.from(text)

describe('readUsage', () => {
  it('finds the usage object of an answer passed through as bytes', () => {
    const answer = JSON.stringify({
      id: 'chatcmpl-1',
      choices: [{ index: 0, message: { role: 'assistant', content: 'the "usage" word and a } brace in text' } }],
      usage: { prompt_tokens: 12, completion_tokens: 340, total_tokens: 352, prompt_tokens_details: { cached_tokens: 0 } },
      system_fingerprint: 'fp',
    })
    expect(readUsage(bytes(answer))).toEqual({ promptTokens: 12, completionTokens: 340 })
    expect(readUsage(bytes(JSON.stringify({ usage: { prompt_tokens: 1, completion_tokens: 2 } }, null, 2)))).toEqual({ promptTokens: 1, completionTokens: 2 })
  })

  it('reads a translated body, and gives null when there is no usable usage', () => {
    expect(usageOf({ prompt_tokens: 3, completion_tokens: 4 })).toEqual({ promptTokens: 3, completionTokens: 4 })
    expect(readUsage(bytes('{"id":"x","choices":[]}'))).toBeNull()
    expect(readUsage(bytes('{"usage":null}'))).toBeNull()
    expect(readUsage(bytes('{"usage":{"prompt_tokens":"many","completion_tokens":2}}'))).toBeNull()
    expect(readUsage(bytes('{"usage":{"prompt_tokens":1,'))).toBeNull()
    // counts that belong to something after the usage object are not its counts
    expect(readUsage(bytes('{"usage":{"total_tokens":3},"other":{"prompt_tokens":1,"completion_tokens":2}}'))).toBeNull()
  })
})

describe('usage in every surface', () => {
  it('reads Anthropic Messages and Responses answers (input/output tokens, cache reads and writes as input)', () => {
    const message = JSON.stringify({ id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'Hi' }], usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 100, output_tokens: 7 } })
    expect(readUsage(bytes(message))).toEqual({ promptTokens: 115, completionTokens: 7 })
    const response = JSON.stringify({ id: 'resp_1', object: 'response', output: [], usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12 } })
    expect(readUsage(bytes(response))).toEqual({ promptTokens: 9, completionTokens: 3 })
    expect(usageOf({ prompt_tokens: 4, total_tokens: 4 })).toEqual({ promptTokens: 4, completionTokens: 0 })
  })

  it("reads a stream's counts off its events, whatever the surface", () => {
    const messages = new StreamUsage()
    for (const data of ['{"type":"message_start","message":{"id":"m","usage":{"input_tokens":21,"cache_read_input_tokens":4,"output_tokens":1}}}', '{"type":"ping"}', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"usage"}}', '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":16}}']) messages.read(data)
    expect(messages.usage).toEqual({ promptTokens: 25, completionTokens: 16 })
    const chat = new StreamUsage()
    chat.read('{"choices":[{"delta":{"content":"Hi"}}],"usage":null}')
    chat.read('{"choices":[{"delta":{"content":"usage"}}],"usage": null}')
    expect(chat.usage).toBeNull()
    chat.read('{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}}')
    expect(chat.usage).toEqual({ promptTokens: 8, completionTokens: 2 })
    const responses = new StreamUsage()
    responses.read('{"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":6}}}')
    expect(responses.usage).toEqual({ promptTokens: 5, completionTokens: 6 })
  })
})
