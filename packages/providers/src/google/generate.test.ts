import { describe, expect, it } from 'vitest'
import { TranslationError } from '../anthropic/errors.ts'
import { fromGenerateContentResponse, toGenerateContentRequest } from './generate.ts'

describe('chat -> generateContent', () => {
  it('puts system messages in systemInstruction, assistant turns as role model, and generation settings unclamped', () => {
    const request = toGenerateContentRequest({
      model: 'x', temperature: 1.6, top_p: 0.9, max_tokens: 200, stop: ['END'], seed: 7,
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'Again' }],
    }, 'gemini-2.5-pro')
    expect(request.systemInstruction).toEqual({ parts: [{ text: 'Be brief.' }] })
    expect((request.contents as Array<{ role: string }>).map((content) => content.role)).toEqual(['user', 'model', 'user'])
    expect(request.generationConfig).toEqual({ maxOutputTokens: 200, temperature: 1.6, topP: 0.9, stopSequences: ['END'], seed: 7 })
  })

  it('round-trips a tool call: functionDeclarations, functionCall, and functionResponse named after the call', () => {
    const request = toGenerateContentRequest({
      model: 'x',
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18 degrees' },
      ],
    }, 'gemini-2.5-pro')
    expect(request.tools).toEqual([{ functionDeclarations: [{ name: 'get_weather', description: 'Weather', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } } }] }])
    expect(request.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } })
    const contents = request.contents as Array<{ role: string; parts: unknown[] }>
    expect(contents[1]).toEqual({ role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] })
    expect(contents[2]).toEqual({ role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { content: '18 degrees' } } }] })
  })

  it('maps tool_choice none and auto to NONE and AUTO', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }]
    const mode = (choice: unknown) => (toGenerateContentRequest({ model: 'x', tools, tool_choice: choice, messages: [{ role: 'user', content: 'Hi' }] }, 'g').toolConfig as { functionCallingConfig: { mode: string } }).functionCallingConfig.mode
    expect(mode('none')).toBe('NONE')
    expect(mode('auto')).toBe('AUTO')
    expect(mode('required')).toBe('ANY')
  })

  it('sends JSON modes as responseMimeType, a JSON schema as responseJsonSchema', () => {
    const object = toGenerateContentRequest({ model: 'x', response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'Hi' }] }, 'g')
    expect(object.generationConfig).toEqual({ responseMimeType: 'application/json' })
    const schema = { type: 'object', properties: { answer: { type: 'string' } } }
    const withSchema = toGenerateContentRequest({ model: 'x', response_format: { type: 'json_schema', json_schema: { name: 'a', schema } }, messages: [{ role: 'user', content: 'Hi' }] }, 'g')
    expect(withSchema.generationConfig).toEqual({ responseMimeType: 'application/json', responseJsonSchema: schema })
  })

  it('refuses what Gemini cannot honour as a TranslationError (the caller\'s 400), never dropping it', () => {
    expect(() => toGenerateContentRequest({ model: 'x', n: 2, messages: [{ role: 'user', content: 'Hi' }] }, 'g')).toThrow(TranslationError)
    expect(() => toGenerateContentRequest({ model: 'x', messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] }, 'g')).toThrow(TranslationError)
  })
})

describe('generateContent -> chat.completion', () => {
  it('reads text, skips thought parts, and counts thinking tokens as completion', () => {
    const completion = fromGenerateContentResponse({
      candidates: [{ content: { role: 'model', parts: [{ text: 'thinking...', thought: true }, { text: 'Hello' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 3, thoughtsTokenCount: 5, cachedContentTokenCount: 4, totalTokenCount: 18 },
    }, 'gemini-2.5-pro', 1, 'id1') as Record<string, any>
    expect(completion.choices[0].message.content).toBe('Hello')
    expect(completion.choices[0].finish_reason).toBe('stop')
    expect(completion.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 8, total_tokens: 18, prompt_tokens_details: { cached_tokens: 4 } })
  })

  it('maps MAX_TOKENS to length, SAFETY to content_filter, a function call to tool_calls, and a blocked prompt to content_filter', () => {
    const finish = (answer: unknown) => (fromGenerateContentResponse(answer, 'g', 1, 'id') as Record<string, any>).choices[0].finish_reason
    expect(finish({ candidates: [{ content: { parts: [{ text: 'a' }] }, finishReason: 'MAX_TOKENS' }] })).toBe('length')
    expect(finish({ candidates: [{ content: { parts: [] }, finishReason: 'SAFETY' }] })).toBe('content_filter')
    expect(finish({ candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }] }, finishReason: 'STOP' }] })).toBe('tool_calls')
    expect(finish({ promptFeedback: { blockReason: 'SAFETY' } })).toBe('content_filter')
    expect(() => fromGenerateContentResponse({ unexpected: true }, 'g', 1, 'id')).toThrow(TranslationError)
  })
})
