import { describe, expect, it } from 'vitest'
import { TranslationError } from './errors.ts'
import { fromAnthropicResponse } from './response.ts'

const CREATED = 1_760_000_000

describe('fromAnthropicResponse', () => {
  it('translates a text answer', () => {
    const message = {
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [{ type: 'text', text: 'Hi! My name is Claude.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 2095, output_tokens: 503 },
    }
    expect(fromAnthropicResponse(message, 'anthropic/claude-sonnet-4-5', CREATED)).toEqual({
      id: 'msg_013Zva2CMHLNnXjNJJKqJ2EF',
      object: 'chat.completion',
      created: CREATED,
      model: 'anthropic/claude-sonnet-4-5',
      choices: [{
        index: 0,
        message: { role: 'assistant', content: 'Hi! My name is Claude.', refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      }],
      usage: { prompt_tokens: 2095, completion_tokens: 503, total_tokens: 2598, prompt_tokens_details: { cached_tokens: 0 } },
    })
  })

  it('translates tool_use blocks into tool_calls with JSON-text arguments', () => {
    const message = {
      id: 'msg_01Aq9w938a90dw8q',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [
        { type: 'text', text: 'I\'ll check the current weather in San Francisco for you.' },
        { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 384, output_tokens: 95 },
    }
    const completion = fromAnthropicResponse(message, 'claude-sonnet-4-5', CREATED)
    expect(completion.choices).toEqual([{
      index: 0,
      message: {
        role: 'assistant',
        content: 'I\'ll check the current weather in San Francisco for you.',
        refusal: null,
        tool_calls: [{
          id: 'toolu_01A09q90qw90lq917835lq9',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' },
        }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    }])
  })

  it('gives content null when the answer is only tool calls', () => {
    const completion = fromAnthropicResponse({
      id: 'msg_1', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} }], stop_reason: 'tool_use', usage: { input_tokens: 10, output_tokens: 5 },
    }, 'claude', CREATED)
    const choices = completion.choices as Array<{ message: { content: unknown, tool_calls: Array<{ function: { arguments: string } }> } }>
    expect(choices[0]?.message.content).toBeNull()
    expect(choices[0]?.message.tool_calls[0]?.function.arguments).toBe('{}')
  })

  it('joins text blocks split around other blocks and leaves thinking out', () => {
    const completion = fromAnthropicResponse({
      id: 'msg_2',
      content: [
        { type: 'thinking', thinking: 'Let me think.', signature: 'sig' },
        { type: 'text', text: 'The answer ' },
        { type: 'text', text: 'is 42.' },
      ],
      stop_reason: 'end_turn',
      usage: { input_tokens: 1, output_tokens: 1 },
    }, 'claude', CREATED)
    expect((completion.choices as Array<{ message: { content: unknown } }>)[0]?.message.content).toBe('The answer is 42.')
  })

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
  ])('maps stop_reason %s to finish_reason %s', (stopReason, finishReason) => {
    const completion = fromAnthropicResponse({
      id: 'msg_3', content: [{ type: 'text', text: 'Once upon a' }], stop_reason: stopReason, usage: { input_tokens: 12, output_tokens: 1024 },
    }, 'claude', CREATED)
    expect((completion.choices as Array<{ finish_reason: string }>)[0]?.finish_reason).toBe(finishReason)
  })

  it('counts cache reads and writes as prompt tokens', () => {
    const completion = fromAnthropicResponse({
      id: 'msg_4',
      content: [{ type: 'text', text: 'Done.' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 21, cache_creation_input_tokens: 188086, cache_read_input_tokens: 1000, output_tokens: 393 },
    }, 'claude', CREATED)
    expect(completion.usage).toEqual({
      prompt_tokens: 189107, completion_tokens: 393, total_tokens: 189500, prompt_tokens_details: { cached_tokens: 1000 },
    })
  })

  it('rejects a body that is not a Message as the upstream\'s fault', () => {
    const error = (() => {
      try {
        fromAnthropicResponse({ type: 'error', error: { type: 'api_error', message: 'Internal server error' } }, 'claude', CREATED)
      } catch (caught) {
        return caught
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(TranslationError)
    expect(error).toMatchObject({ code: 'upstream_malformed' })
  })
})
