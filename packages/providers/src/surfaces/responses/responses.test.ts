import { describe, expect, it } from 'vitest'
import { chunksOf as from, collectEvents as collect } from '../stream-testing.ts'
import { responsesTranslation } from './request.ts'
import { chatToResponse } from './response.ts'
import { chatStreamToResponseEvents } from './stream.ts'

const responsesToChat = (body: Record<string, unknown>) => responsesTranslation(body).chat

describe('responsesToChat', () => {
  it('turns instructions and input items into chat messages; function calls join the assistant turn', () => {
    const chat = responsesToChat({
      model: 'm', instructions: 'Be brief.', max_output_tokens: 50, stream: true, parallel_tool_calls: false,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] },
        { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://x/y.png', detail: 'low' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'calling' }] },
        { type: 'reasoning', id: 'rs', summary: [], encrypted_content: 'secret' },
        { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{"x":1}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
      ],
      tools: [{ type: 'function', name: 'a', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'a' },
      text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
    })
    expect(chat.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'rules' },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } }] },
      { role: 'assistant', content: 'calling', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } }, { id: 'c2', type: 'function', function: { name: 'b', arguments: '{"x":1}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
    ])
    expect(chat).toMatchObject({
      max_tokens: 50, parallel_tool_calls: false, stream: true, stream_options: { include_usage: true },
      tool_choice: { type: 'function', function: { name: 'a' } },
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } },
    })
  })

  it('refuses stored state, a forced hosted tool and tools without a chat form instead of dropping them', () => {
    expect(() => responsesToChat({ model: 'm', input: 'x', previous_response_id: 'resp_1' })).toThrow(/previous_response_id/)
    expect(() => responsesToChat({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] })).toThrow(/item references/)
    expect(() => responsesToChat({ model: 'm', input: 'x', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } })).toThrow(/runs at OpenAI/)
    expect(() => responsesToChat({ model: 'm', input: 'x', tools: [{ type: 'custom', name: 'apply_patch', format: { type: 'grammar' } }] })).toThrow(/"custom" tools cannot be sent/)
  })
})

describe('chatToResponse', () => {
  it('builds a response with message and function_call items and usage', () => {
    const response = chatToResponse({
      created: 5, choices: [{ finish_reason: 'tool_calls', message: { content: 'hi', tool_calls: [{ id: 'c1', function: { name: 'a', arguments: '{"q":1}' } }] } }],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    }, 'm', { tools: [], instructions: 'I' })
    expect(response).toMatchObject({
      object: 'response', status: 'completed', model: 'm', created_at: 5, instructions: 'I',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] }, { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{"q":1}' }],
      usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 },
    })
    expect(chatToResponse({ choices: [{ finish_reason: 'length', message: { content: 'x' } }] }, 'm', {})).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } })
  })
})

describe('chatStreamToResponseEvents', () => {
  it('emits the Responses event sequence with rising sequence numbers, and a completed response equal to the deltas', async () => {
    const events = await collect(chatStreamToResponseEvents(from([
      { choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi ' } }] },
      { choices: [{ index: 0, delta: { content: 'there' } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'c1', function: { name: 'a', arguments: '{"q"' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 4, completion_tokens: 6 } },
    ]), 'm', {}))
    expect(events.map((event) => event.type)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
      'response.function_call_arguments.done', 'response.output_item.done',
      'response.completed',
    ])
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index))
    const completed = events.at(-1)!.response
    expect(completed.output).toMatchObject([
      { type: 'message', status: 'completed', content: [{ type: 'output_text', text: 'Hi there' }] },
      { type: 'function_call', status: 'completed', call_id: 'c1', name: 'a', arguments: '{"q":1}' },
    ])
    expect(completed.usage).toMatchObject({ input_tokens: 4, output_tokens: 6, total_tokens: 10 })
    expect(events[0]!.response.status).toBe('in_progress')
  })
})
