import { describe, expect, it } from 'vitest'
import { carriesContent } from './content.ts'

describe('carriesContent', () => {
  it('reads role-only and prompt-filter chat chunks as preamble, and deltas, tool calls and endings as content', () => {
    expect(carriesContent('chat', '{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}')).toBe(false)
    expect(carriesContent('chat', '{"choices":[],"prompt_filter_results":[{"prompt_index":0}]}')).toBe(false)
    expect(carriesContent('chat', '{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}')).toBe(true)
    expect(carriesContent('chat', '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1"}]}}]}')).toBe(true)
    expect(carriesContent('chat', '{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}')).toBe(true)
    expect(carriesContent('chat', '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}')).toBe(true)
    expect(carriesContent('chat', '{"choices":[],"usage":{"total_tokens":3}}')).toBe(true)
  })

  it('reads message_start, ping and empty block openings as preamble on Messages', () => {
    expect(carriesContent('messages', '{"type":"message_start","message":{"id":"msg_1"}}')).toBe(false)
    expect(carriesContent('messages', '{"type":"ping"}')).toBe(false)
    expect(carriesContent('messages', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}')).toBe(false)
    expect(carriesContent('messages', '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"get"}}')).toBe(true)
    expect(carriesContent('messages', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}')).toBe(true)
    expect(carriesContent('messages', '{"type":"message_stop"}')).toBe(true)
  })

  it('reads the created, in-progress and item-opening events as preamble on Responses', () => {
    for (const type of ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']) {
      expect(carriesContent('responses', JSON.stringify({ type }))).toBe(false)
    }
    expect(carriesContent('responses', '{"type":"response.output_text.delta","delta":"Hi"}')).toBe(true)
    expect(carriesContent('responses', '{"type":"response.completed","response":{}}')).toBe(true)
  })
})
