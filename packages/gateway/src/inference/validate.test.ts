import { describe, expect, it } from 'vitest'
import { GatewayError } from '../errors.ts'
import { validateChatRequest } from './validate.ts'

function problem(json: unknown): { message: string; param: string | null } {
  try {
    validateChatRequest(json)
  } catch (error) {
    if (error instanceof GatewayError) return { message: error.message, param: error.param }
    throw error
  }
  throw new Error('expected a GatewayError')
}

const messages = [{ role: 'user', content: 'hi' }]

describe('validateChatRequest', () => {
  it('accepts a minimal body and strips the gateway-only fallbacks field', () => {
    const request = validateChatRequest({ model: 'openai/gpt-4o', messages, fallbacks: ['anthropic/claude-3-5-haiku-latest'], temperature: 0.2 })
    expect(request).toEqual({ body: { model: 'openai/gpt-4o', messages, temperature: 0.2 }, model: 'openai/gpt-4o', fallbacks: ['anthropic/claude-3-5-haiku-latest'], stream: false })
  })

  it.each([
    [[], '', /JSON object/],
    [{ messages }, 'model', /"model" is required/],
    [{ model: '', messages }, 'model', /non-empty/],
    [{ model: 'm' }, 'messages', /"messages" is required/],
    [{ model: 'm', messages: [] }, 'messages', /non-empty array/],
    [{ model: 'm', messages: ['hi'] }, 'messages[0]', /must be an object/],
    [{ model: 'm', messages: [{ content: 'x' }] }, 'messages[0].role', /role must be one of/],
    [{ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role', /role must be one of/],
    [{ model: 'm', messages: [{ role: 'user', content: 5 }] }, 'messages[0].content', /string or an array/],
    [{ model: 'm', messages: [{ role: 'user' }] }, 'messages[0].content', /required/],
    [{ model: 'm', messages: [{ role: 'user', content: [{ text: 'x' }] }] }, 'messages[0].content[0]', /"type"/],
    [{ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] }, 'messages[0].content[0].text', /string/],
    [{ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id', /tool call/],
    [{ model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: 'x' }] }, 'messages[0].tool_calls', /array/],
    [{ model: 'm', messages, stream: 'yes' }, 'stream', /true or false/],
    [{ model: 'm', messages, stream: null }, 'stream', /true or false/],
    [{ model: 'm', messages, max_tokens: -5 }, 'max_tokens', /between 1 and/],
    [{ model: 'm', messages, max_tokens: 1.5 }, 'max_tokens', /whole number/],
    [{ model: 'm', messages, temperature: 3 }, 'temperature', /between 0 and 2/],
    [{ model: 'm', messages, n: 0 }, 'n', /between 1/],
    [{ model: 'm', messages, tools: 'x' }, 'tools', /must be an array/],
    [{ model: 'm', messages, tools: [{ type: 'function', function: {} }] }, 'tools[0].function.name', /non-empty string/],
    [{ model: 'm', messages, tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }, 'tools[0].function.parameters', /JSON Schema/],
    [{ model: 'm', messages, tool_choice: 5 }, 'tool_choice', /string/],
    [{ model: 'm', messages, stop: [1] }, 'stop', /up to 4 strings/],
    [{ model: 'm', messages, logit_bias: { 50256: 500 } }, 'logit_bias.50256', /-100 to 100/],
    [{ model: 'm', messages, response_format: 'json' }, 'response_format', /"type"/],
    [{ model: 'm', messages, user: 5 }, 'user', /string/],
    [{ model: 'm', messages, fallbacks: Array.from({ length: 11 }, () => 'openai/gpt-4o') }, 'fallbacks', /at most 10/],
    [{ model: 'm', messages, fallbacks: 'openai/gpt-4o' }, 'fallbacks', /array/],
    [{ model: 'm', messages, fallbacks: ['gpt-4o'] }, 'fallbacks[0]', /provider\/model/],
    [{ model: 'm', messages, temperature: '0.5' }, 'temperature', /must be a number/],
  ])('rejects %j naming %s', (body, param, message) => {
    const found = problem(body)
    expect(found.param).toBe(param)
    expect(found.message).toMatch(message)
  })
})

describe('validateChatRequest passes through', () => {
  it('unknown fields, nulls for nullable fields, and full OpenAI bodies', () => {
    const body = {
      model: 'openai/gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'data:,' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      ],
      temperature: null,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      stop: ['x'],
      custom_vendor_field: { anything: [1, 2] },
      __proto__: 5,
      constructor: 'x',
    }
    expect(validateChatRequest(JSON.parse(JSON.stringify(body))).body).toMatchObject({ custom_vendor_field: { anything: [1, 2] } })
  })
})
