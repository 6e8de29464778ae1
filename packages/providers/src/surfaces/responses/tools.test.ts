/** Responses tools through the chat translation: Codex's namespaces and hosted tools (issue 37). */
import { describe, expect, it } from 'vitest'
import { chunksOf as from, collectEvents as collect } from '../../../test/stream-testing.ts'
import { responsesTranslation } from './request.ts'
import { chatToResponse } from './response.ts'
import { chatStreamToResponseEvents } from './stream.ts'
import { chatToolsOf } from './tools.ts'

const schema = { type: 'object', properties: { target: { type: 'string' } }, required: ['target'], additionalProperties: false }

/** What Codex 0.171 sends: plain function tools, a namespace of agent tools, and OpenAI's web search. */
const codexTools = [
  { type: 'function', name: 'exec_command', description: 'Run a command', strict: false, parameters: schema },
  { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [
    { type: 'function', name: 'close_agent', description: 'Close an agent', strict: false, parameters: schema },
    { type: 'function', name: 'spawn_agent', description: 'Spawn an agent', strict: false, parameters: schema },
  ] },
  { type: 'namespace', name: 'mcp__docs__', description: 'An MCP server', tools: [{ type: 'function', name: 'search', parameters: schema }] },
  { type: 'web_search', external_web_access: false },
]

describe('Responses tools to chat', () => {
  it('a namespace becomes its function tools, each named <namespace>__<tool>; an offered hosted tool is left out with a note', () => {
    const { chat, notes } = responsesTranslation({ model: 'claude-sonnet-4-5', input: 'hi', tools: codexTools, tool_choice: 'auto' })
    const names = (chat.tools as { function: { name: string; description?: string; strict?: boolean } }[]).map((tool) => tool.function.name)
    expect(names).toEqual(['exec_command', 'multi_agent_v1__close_agent', 'multi_agent_v1__spawn_agent', 'mcp__docs__search'])
    expect(chat.tools).toContainEqual({ type: 'function', function: { name: 'multi_agent_v1__close_agent', description: 'Close an agent', strict: false, parameters: schema } })
    expect(chat.tool_choice).toBe('auto')
    expect(notes).toEqual(['left out web_search: hosted tools run at OpenAI only, and this upstream is reached through the chat translation'])
  })

  it('names chat cannot take are made safe, long or clashing ones shortened with a stable hash, and all map back', () => {
    const long = 'x'.repeat(70)
    const tools = chatToolsOf([
      { type: 'function', name: 'ns__tool' },
      { type: 'namespace', name: 'ns', tools: [{ type: 'function', name: 'tool' }, { name: 'dotted.name' }, { type: 'function', name: long }] },
    ], undefined)
    const flat = (tools.tools as { function: { name: string } }[]).map((tool) => tool.function.name)
    expect(flat[0]).toBe('ns__tool')
    expect(flat[1]).toMatch(/^ns__tool_[0-9a-f]{8}$/)
    expect(flat[2]).toBe('ns__dotted_name')
    expect(flat[3]!.length).toBe(64)
    for (const name of flat) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
    expect(tools.names.callName(flat[1]!)).toEqual({ namespace: 'ns', name: 'tool' })
    expect(tools.names.callName(flat[3]!)).toEqual({ namespace: 'ns', name: long })
    expect(tools.names.callName('ns__tool')).toEqual({ name: 'ns__tool' })
    expect(chatToolsOf([{ type: 'namespace', name: 'ns', tools: [{ type: 'function', name: long }] }], undefined).tools).toEqual([expect.objectContaining({ function: expect.objectContaining({ name: flat[3] }) })])
  })

  it('a namespace holding anything but functions is refused, naming it', () => {
    expect(() => chatToolsOf([{ type: 'namespace', name: 'ns', tools: [{ type: 'web_search' }] }], undefined)).toThrow(/tools\[0\]\.tools\[0\]/)
    expect(() => chatToolsOf([{ type: 'function' }], undefined)).toThrow(/tools\[0\]\.name: a function tool needs a name/)
  })

  it('calls of namespaced tools in the history and in tool_choice use the upstream name', () => {
    const { chat } = responsesTranslation({
      model: 'm', tools: codexTools, tool_choice: { type: 'function', name: 'spawn_agent', namespace: 'multi_agent_v1' },
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'spawn one' }] },
        { type: 'function_call', call_id: 'c1', namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: '{"target":"a"}' },
        { type: 'function_call_output', call_id: 'c1', output: 'spawned' },
      ],
    })
    expect(chat.messages[1]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'multi_agent_v1__spawn_agent', arguments: '{"target":"a"}' } }] })
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'multi_agent_v1__spawn_agent' } })
  })

  it('the answer names a namespaced call back: name and namespace, as OpenAI answers (JSON)', () => {
    const request = { model: 'm', input: 'hi', tools: codexTools }
    const response = chatToResponse({
      choices: [{ finish_reason: 'tool_calls', message: { role: 'assistant', content: null, tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{"target":"a"}' } },
        { id: 'c2', type: 'function', function: { name: 'exec_command', arguments: '{}' } },
      ] } }],
    }, 'm', request)
    const calls = response.output as Record<string, unknown>[]
    expect(calls[0]).toMatchObject({ type: 'function_call', call_id: 'c1', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"target":"a"}' })
    expect(calls[1]).toMatchObject({ type: 'function_call', call_id: 'c2', name: 'exec_command' })
    expect(calls[1]).not.toHaveProperty('namespace')
  })

  it('the answer names a namespaced call back (stream: added and done items)', async () => {
    const request = { model: 'm', input: 'hi', tools: codexTools, stream: true }
    const events = await collect(chatStreamToResponseEvents(from([
      { choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'mcp__docs__search', arguments: '' } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"target":"x"}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]), 'm', request))
    const added = events.find((event) => event.type === 'response.output_item.added') as { item: Record<string, unknown> }
    const done = events.find((event) => event.type === 'response.output_item.done') as { item: Record<string, unknown> }
    expect(added.item).toMatchObject({ type: 'function_call', name: 'search', namespace: 'mcp__docs__' })
    expect(done.item).toMatchObject({ type: 'function_call', name: 'search', namespace: 'mcp__docs__', arguments: '{"target":"x"}' })
  })
})
