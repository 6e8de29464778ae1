import { describe, expect, it } from 'vitest'
import { readUsage } from './usage.ts'

const bytes = (text: string) => ({ bytes: Buffer.from(text) })

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
    expect(readUsage({ body: { usage: { prompt_tokens: 3, completion_tokens: 4 } } })).toEqual({ promptTokens: 3, completionTokens: 4 })
    expect(readUsage(bytes('{"id":"x","choices":[]}'))).toBeNull()
    expect(readUsage(bytes('{"usage":null}'))).toBeNull()
    expect(readUsage(bytes('{"usage":{"prompt_tokens":"many","completion_tokens":2}}'))).toBeNull()
    expect(readUsage(bytes('{"usage":{"prompt_tokens":1,'))).toBeNull()
    // counts that belong to something after the usage object are not its counts
    expect(readUsage(bytes('{"usage":{"total_tokens":3},"other":{"prompt_tokens":1,"completion_tokens":2}}'))).toBeNull()
  })
})
