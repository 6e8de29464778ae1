import { describe, expect, it } from 'vitest'
import type { ChatRequestBody } from '../types.ts'
import { TranslationError } from './errors.ts'
import { DEFAULT_MAX_TOKENS, toAnthropicRequest } from './request.ts'

const MODEL = 'claude-sonnet-4-5'

function body (fields: Partial<ChatRequestBody>): ChatRequestBody {
  return { model: 'anthropic/claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello' }], ...fields }
}

/** Runs `run` and returns the TranslationError it throws, failing the test if it throws nothing else. */
function translationErrorOf (run: () => unknown): TranslationError {
  try {
    run()
  } catch (error) {
    if (error instanceof TranslationError) return error
    throw error
  }
  throw new Error('expected a TranslationError, nothing was thrown')
}

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the current weather in a given location',
    parameters: {
      type: 'object',
      properties: { location: { type: 'string', description: 'The city and state, e.g. San Francisco, CA' } },
      required: ['location'],
    },
  },
}

describe('toAnthropicRequest', () => {
  it('hoists system and developer messages into `system` and keeps the turns alternating', () => {
    const request = toAnthropicRequest(body({
      messages: [
        { role: 'system', content: 'You are a seasoned data scientist at a Fortune 500 company.' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in one paragraph.' }] },
        { role: 'user', content: 'Hello there.' },
        { role: 'assistant', content: 'Hi, I\'m Claude. How can I help you?' },
        { role: 'user', content: 'Can you explain LLMs in plain English?' },
      ],
    }), MODEL)
    expect(request).toEqual({
      model: MODEL,
      max_tokens: DEFAULT_MAX_TOKENS,
      system: [
        { type: 'text', text: 'You are a seasoned data scientist at a Fortune 500 company.' },
        { type: 'text', text: 'Answer in one paragraph.' },
      ],
      messages: [
        { role: 'user', content: 'Hello there.' },
        { role: 'assistant', content: 'Hi, I\'m Claude. How can I help you?' },
        { role: 'user', content: 'Can you explain LLMs in plain English?' },
      ],
    })
  })

  it('sends a single system message as a plain string and uses the given model, not body.model', () => {
    const request = toAnthropicRequest(body({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }), MODEL)
    expect(request.system).toBe('Be brief.')
    expect(request.model).toBe(MODEL)
  })

  it('merges consecutive user messages, and drops an empty assistant turn between them', () => {
    const request = toAnthropicRequest(body({
      messages: [
        { role: 'user', content: 'First question.' },
        { role: 'assistant', content: '' },
        { role: 'user', content: [{ type: 'text', text: 'Second question.' }] },
      ],
    }), MODEL)
    expect(request.messages).toEqual([{
      role: 'user',
      content: [{ type: 'text', text: 'First question.' }, { type: 'text', text: 'Second question.' }],
    }])
  })

  it('turns a tool round trip into tool_use blocks and ONE user message of tool_result blocks', () => {
    const request = toAnthropicRequest(body({
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'What is the weather like in San Francisco and in New York?' },
        {
          role: 'assistant',
          content: 'I\'ll check both cities.',
          tool_calls: [
            { id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA"}' } },
            { id: 'toolu_01B18r81rx81mr826746mr8', type: 'function', function: { name: 'get_weather', arguments: '{"location":"New York, NY"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees' },
        { role: 'tool', tool_call_id: 'toolu_01B18r81rx81mr826746mr8', content: [{ type: 'text', text: '22 degrees' }] },
        { role: 'user', content: 'Which one is warmer?' },
      ],
    }), MODEL)
    expect(request.messages).toEqual([
      { role: 'user', content: 'What is the weather like in San Francisco and in New York?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'I\'ll check both cities.' },
          { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA' } },
          { type: 'tool_use', id: 'toolu_01B18r81rx81mr826746mr8', name: 'get_weather', input: { location: 'New York, NY' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees' },
          { type: 'tool_result', tool_use_id: 'toolu_01B18r81rx81mr826746mr8', content: '22 degrees' },
          { type: 'text', text: 'Which one is warmer?' },
        ],
      },
    ])
    expect(request.tools).toEqual([{
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      input_schema: weatherTool.function.parameters,
    }])
    expect(request).not.toHaveProperty('tool_choice')
  })

  it('sends `{}` as input when earlier tool-call arguments are not a JSON object', () => {
    const request = toAnthropicRequest(body({
      messages: [
        { role: 'user', content: 'Go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'cut_off', arguments: '{"location": "San Fr' } },
            { id: 'toolu_2', type: 'function', function: { name: 'no_arguments', arguments: '' } },
            { id: 'toolu_3', type: 'function', function: { name: 'a_list', arguments: '[1, 2]' } },
          ],
        },
      ],
    }), MODEL)
    const messages = request.messages as Array<{ content: Array<{ input: unknown }> }>
    expect(messages[1]?.content.map((block) => block.input)).toEqual([{}, {}, {}])
  })

  it('gives a tool without parameters an empty object schema', () => {
    const request = toAnthropicRequest(body({ tools: [{ type: 'function', function: { name: 'get_time' } }] }), MODEL)
    expect(request.tools).toEqual([{ name: 'get_time', input_schema: { type: 'object', properties: {} } }])
  })

  it('turns data: image URLs into base64 sources and http URLs into url sources', () => {
    const request = toAnthropicRequest(body({
      messages: [{
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQSkZJRg==', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg' } },
          { type: 'text', text: 'Compare these images.' },
        ],
      }],
    }), MODEL)
    expect(request.messages).toEqual([{
      role: 'user',
      content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQSkZJRg==' } },
        { type: 'image', source: { type: 'url', url: 'https://upload.wikimedia.org/wikipedia/commons/a/a7/Camponotus_flavomarginatus_ant.jpg' } },
        { type: 'text', text: 'Compare these images.' },
      ],
    }])
  })

  it('turns an inline PDF file into a document block', () => {
    const request = toAnthropicRequest(body({
      messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }] }],
    }), MODEL)
    expect(request.messages).toEqual([{
      role: 'user',
      content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }],
    }])
  })

  it('rejects a data: URL that is not base64', () => {
    const error = translationErrorOf(() => toAnthropicRequest(body({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/svg+xml,<svg/>' } }] }],
    }), MODEL))
    expect(error.code).toBe('translation_invalid')
    expect(error.field).toBe('messages[0].content[0].image_url.url')
  })

  it.each([
    ['auto', undefined, { type: 'auto' }],
    ['none', undefined, { type: 'none' }],
    ['required', undefined, { type: 'any' }],
    [{ type: 'function', function: { name: 'get_weather' } }, undefined, { type: 'tool', name: 'get_weather' }],
    ['required', false, { type: 'any', disable_parallel_tool_use: true }],
    [{ type: 'function', function: { name: 'get_weather' } }, false, { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true }],
    [undefined, false, { type: 'auto', disable_parallel_tool_use: true }],
    ['none', false, { type: 'none' }],
    ['auto', true, { type: 'auto' }],
  ])('maps tool_choice %j with parallel_tool_calls %j to %j', (toolChoice, parallel, expected) => {
    const request = toAnthropicRequest(body({ tools: [weatherTool], tool_choice: toolChoice, parallel_tool_calls: parallel }), MODEL)
    expect(request.tool_choice).toEqual(expected)
  })

  it('sends no tool_choice when there are no tools', () => {
    expect(toAnthropicRequest(body({ tool_choice: 'required', parallel_tool_calls: false }), MODEL)).not.toHaveProperty('tool_choice')
  })

  it('maps stop, sampling, stream and user', () => {
    const request = toAnthropicRequest(body({
      stop: ['\n\nHuman:', 'END'], temperature: 1.5, top_p: 0.9, stream: true, user: 'user-1234', seed: 7,
    }), MODEL)
    expect(request).toMatchObject({
      stop_sequences: ['\n\nHuman:', 'END'], temperature: 1, top_p: 0.9, stream: true, metadata: { user_id: 'user-1234' },
    })
    expect(request).not.toHaveProperty('seed')
    expect(toAnthropicRequest(body({ stop: 'END', temperature: 0.2 }), MODEL)).toMatchObject({ stop_sequences: ['END'], temperature: 0.2 })
  })

  it('leaves out optional fields that are absent or null', () => {
    const request = toAnthropicRequest(body({ stop: null, temperature: null, stream: false }), MODEL)
    expect(Object.keys(request).sort()).toEqual(['max_tokens', 'messages', 'model'])
  })

  it('takes max_completion_tokens over max_tokens, and defaults to 4096', () => {
    expect(toAnthropicRequest(body({ max_tokens: 300 }), MODEL).max_tokens).toBe(300)
    expect(toAnthropicRequest(body({ max_tokens: 300, max_completion_tokens: 500 }), MODEL).max_tokens).toBe(500)
    expect(toAnthropicRequest(body({}), MODEL).max_tokens).toBe(4096)
    expect(translationErrorOf(() => toAnthropicRequest(body({ max_tokens: 0 }), MODEL)).field).toBe('max_tokens')
  })

  it.each([
    ['n', { n: 2 }],
    ['logprobs', { logprobs: true }],
    ['top_logprobs', { top_logprobs: 3 }],
    ['response_format', { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['functions', { functions: [{ name: 'f' }] }],
    ['tools[0].type', { tools: [{ type: 'custom', custom: { name: 'x' } }] }],
    ['messages[0].role', { messages: [{ role: 'function', name: 'f', content: '1' }] }],
    ['messages[0].content[0]', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AA', format: 'wav' } }] }] }],
  ])('refuses what Anthropic cannot honour: %s', (field, fields) => {
    const error = translationErrorOf(() => toAnthropicRequest(body(fields), MODEL))
    expect(error.code).toBe('translation_unsupported')
    expect(error.field).toBe(field)
  })

  it('accepts n=1 and a json_object response_format', () => {
    expect(() => toAnthropicRequest(body({ n: 1, response_format: { type: 'json_object' } }), MODEL)).not.toThrow()
  })

  it('requires tool_call_id on tool messages', () => {
    const error = translationErrorOf(() => toAnthropicRequest(body({ messages: [{ role: 'tool', content: 'x' }] }), MODEL))
    expect(error).toMatchObject({ code: 'translation_invalid', field: 'messages[0].tool_call_id' })
  })
})
