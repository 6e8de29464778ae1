import { describe, expect, it } from 'vitest'
import { TranslationError } from '../anthropic/errors.ts'
import { fromConverseResponse, toConverseRequest } from './converse.ts'

describe('chat.completions -> Converse', () => {
  it('hoists system, maps tool calls and tool results, inference settings and tool choice', () => {
    const converse = toConverseRequest({
      model: 'x',
      max_tokens: 200,
      temperature: 1.5,
      top_p: 0.9,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'required',
    }, 'model-id')
    expect(converse.system).toEqual([{ text: 'Be brief.' }])
    expect(converse.messages).toEqual([
      { role: 'user', content: [{ text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Paris' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'call_1', content: [{ text: '18C' }] } }] },
    ])
    // Temperature is clamped into 0..1 as for Anthropic.
    expect(converse.inferenceConfig).toEqual({ maxTokens: 200, temperature: 1, topP: 0.9, stopSequences: ['END'] })
    expect(converse.toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'get_weather', description: 'Weather', inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } } } } } }],
      toolChoice: { any: {} },
    })
  })

  it('leaves the tools out for tool_choice "none", and refuses what Converse cannot carry', () => {
    const tools = [{ type: 'function', function: { name: 'f' } }]
    expect(toConverseRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }], tools, tool_choice: 'none' }, 'm').toolConfig).toBeUndefined()
    expect(() => toConverseRequest({ model: 'x', n: 2, messages: [{ role: 'user', content: 'hi' }] }, 'm')).toThrow(TranslationError)
    const remoteImage = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }]
    expect(() => toConverseRequest({ model: 'x', messages: remoteImage }, 'm')).toThrow(/inline only/)
  })
})

describe('Converse -> chat.completion', () => {
  it('reads text, tool use, stop reason and usage', () => {
    const completion = fromConverseResponse({
      output: { message: { role: 'assistant', content: [{ text: 'Checking.' }, { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Paris' } } }] } },
      stopReason: 'tool_use',
      usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 },
    }, 'claude', 1_700_000_000, 'chatcmpl-1') as Record<string, any>
    expect(completion.choices[0].message.content).toBe('Checking.')
    expect(completion.choices[0].message.tool_calls).toEqual([{ id: 'tu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }])
    expect(completion.choices[0].finish_reason).toBe('tool_calls')
    expect(completion.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 })
  })

  it('reports a guardrail stop as content_filter and a body without output as malformed', () => {
    const filtered = fromConverseResponse({ output: { message: { content: [] } }, stopReason: 'guardrail_intervened', usage: {} }, 'm', 0, 'id') as Record<string, any>
    expect(filtered.choices[0].finish_reason).toBe('content_filter')
    expect(() => fromConverseResponse({ message: 'hi' }, 'm', 0, 'id')).toThrow(TranslationError)
  })
})
