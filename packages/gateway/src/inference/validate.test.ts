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
    [{ model: 'm', messages: [{ content: 'x' }] }, 'messages[0].role', /role must be a string/],
    [{ model: 'm', messages, stream: 'yes' }, 'stream', /true or false/],
    [{ model: 'm', messages, fallbacks: 'openai/gpt-4o' }, 'fallbacks', /array/],
    [{ model: 'm', messages, fallbacks: ['gpt-4o'] }, 'fallbacks[0]', /provider\/model/],
    [{ model: 'm', messages, temperature: '0.5' }, 'temperature', /must be a number/],
  ])('rejects %j naming %s', (body, param, message) => {
    const found = problem(body)
    expect(found.param).toBe(param)
    expect(found.message).toMatch(message)
  })
})
