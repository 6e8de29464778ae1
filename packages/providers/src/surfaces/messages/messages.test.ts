import { describe, expect, it } from 'vitest'
import { chunksOf as from, collectEvents as collect } from '../../../test/stream-testing.ts'
import { TranslationError } from '../../anthropic/errors.ts'
import { messagesToChat } from './request.ts'
import { chatToMessage } from './response.ts'
import { chatStreamToMessageEvents } from './stream.ts'


describe('messagesToChat', () => {
  it('puts system first, tool results as tool messages before the rest of the user turn, images as data URLs', () => {
    const chat = messagesToChat({
      model: 'claude-sonnet-4-5', max_tokens: 100, stream: true,
      system: [{ type: 'text', text: 'A' }, { type: 'text', text: 'B' }],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'text', text: 'calling' }, { type: 'tool_use', id: 't1', name: 'ls', input: { dir: '.' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'a.txt' }] }, { type: 'text', text: 'now what?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
      ],
      tools: [{ name: 'ls', description: 'list', input_schema: { type: 'object' } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      metadata: { user_id: 'u1' },
    })
    expect(chat.messages).toEqual([
      { role: 'system', content: 'A\n\nB' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'calling', tool_calls: [{ id: 't1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
      { role: 'user', content: [{ type: 'text', text: 'now what?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    ])
    expect(chat).toMatchObject({ max_tokens: 100, stop: ['END'], user: 'u1', tool_choice: 'required', parallel_tool_calls: false, stream: true, stream_options: { include_usage: true } })
    expect(chat.tools).toEqual([{ type: 'function', function: { name: 'ls', description: 'list', parameters: { type: 'object' } } }])
  })

  it('refuses what chat cannot say instead of dropping it', () => {
    const refuse = (body: Record<string, unknown>) => {
      try {
        messagesToChat({ model: 'm', max_tokens: 1, ...body })
      } catch (error) {
        return error
      }
      return undefined
    }
    expect(refuse({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search_20250305', name: 'web_search' }] })).toBeInstanceOf(TranslationError)
    expect(refuse({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } }] }] })).toMatchObject({ code: 'translation_unsupported' })
    expect(refuse({ messages: [{ role: 'tool', content: 'x' }] })).toMatchObject({ code: 'translation_invalid' })
    expect(refuse({ messages: [{ role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] })).toMatchObject({ code: 'translation_invalid' })
  })

  it('a system turn inside messages (Claude Code) stays a system message where it is (issue 37)', () => {
    const chat = messagesToChat({
      model: 'm', max_tokens: 8, system: [{ type: 'text', text: 'top' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
        { role: 'system', content: 'agents you may call' },
        { role: 'system', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
        { role: 'system', content: '' },
      ],
    })
    expect(chat.messages).toEqual([
      { role: 'system', content: 'top' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'agents you may call' },
      { role: 'system', content: 'a\n\nb' },
    ])
  })
})

describe('chatToMessage', () => {
  it('maps content, tool calls, stop reason and usage', () => {
    const message = chatToMessage({
      id: 'chatcmpl-1', choices: [{ finish_reason: 'tool_calls', message: { role: 'assistant', content: 'ok', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir":"/"}' } }] } }],
      usage: { prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } },
    }, 'gpt-4o')
    expect(message).toMatchObject({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'gpt-4o', stop_reason: 'tool_use', stop_sequence: null,
      content: [{ type: 'text', text: 'ok' }, { type: 'tool_use', id: 'c1', name: 'ls', input: { dir: '/' } }],
      usage: { input_tokens: 6, output_tokens: 3, cache_read_input_tokens: 4, cache_creation_input_tokens: 0 },
    })
    expect(chatToMessage({ choices: [{ finish_reason: 'length', message: { content: 'x' } }] }, 'm').stop_reason).toBe('max_tokens')
  })
})

describe('chatStreamToMessageEvents', () => {
  it('emits Anthropic\'s event order, one block per text run and per tool call', async () => {
    const events = await collect(chatStreamToMessageEvents(from([
      { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
      { choices: [{ index: 0, delta: { content: 'Hel' } }] },
      { choices: [{ index: 0, delta: { content: 'lo' } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'ls', arguments: '' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"dir"' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':"/"}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 7, completion_tokens: 5 } },
    ]), 'gpt-4o'))
    expect(events.map((event) => event.type)).toEqual([
      'message_start', 'ping',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'message_delta', 'message_stop',
    ])
    expect(events[2]).toMatchObject({ index: 0, content_block: { type: 'text' } })
    expect(events[6]).toMatchObject({ index: 1, content_block: { type: 'tool_use', id: 'c1', name: 'ls' } })
    expect(events.filter((event) => event.delta?.type === 'input_json_delta').map((event) => event.delta.partial_json).join('')).toBe('{"dir":"/"}')
    expect(events[10]).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { input_tokens: 7, output_tokens: 5 } })
  })

  it('a stream with no chunk at all is the upstream\'s fault', async () => {
    await expect(collect(chatStreamToMessageEvents(from([]), 'm'))).rejects.toMatchObject({ code: 'upstream_malformed' })
  })
})
