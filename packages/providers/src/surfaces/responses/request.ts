/**
 * OpenAI Responses request -> chat.completions request, for upstreams without the Responses API.
 * Pure. What chat cannot carry is a 400, never dropped; conversation state (`previous_response_id`,
 * item references) only exists at OpenAI, so it is refused.
 */
import { invalid, unsupported } from '../../anthropic/errors.ts'
import type { ChatMessage, ChatRequestBody } from '../../types.ts'
import { asRecord, textOf } from '../shared.ts'
import { chatToolsOf, type ToolNames } from './tools.ts'

/** Translates a Responses body, with notes on what it left out for the routing log; fields that only tune are ignored (docs/api.md). */
export function responsesTranslation(body: Record<string, unknown>): { chat: ChatRequestBody; notes: string[] } {
  if (typeof body.previous_response_id === 'string' && body.previous_response_id !== '') throw unsupported('previous_response_id: the conversation is stored at OpenAI, and this upstream is not OpenAI. Send the whole conversation in "input" instead, or use an OpenAI model with "store": true.', 'previous_response_id')
  const messages: ChatMessage[] = []
  const tools = chatToolsOf(body.tools, body.tool_choice)
  if (typeof body.instructions === 'string' && body.instructions !== '') messages.push({ role: 'system', content: body.instructions })
  const input = body.input
  if (typeof input === 'string') messages.push({ role: 'user', content: input })
  else if (Array.isArray(input)) input.forEach((item, index) => appendItem(messages, item, index, tools.names))
  else throw invalid('input: must be a string or an array of input items.', 'input')
  const chat: ChatRequestBody = { model: String(body.model), messages }
  if (typeof body.max_output_tokens === 'number') chat.max_tokens = body.max_output_tokens
  if (typeof body.temperature === 'number') chat.temperature = body.temperature
  if (typeof body.top_p === 'number') chat.top_p = body.top_p
  if (typeof body.user === 'string') chat.user = body.user
  if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls
  if (tools.tools.length > 0) {
    chat.tools = tools.tools
    const choice = body.tool_choice
    const named = asRecord(choice)
    if (choice === 'auto' || choice === 'none' || choice === 'required') chat.tool_choice = choice
    else if (named?.type === 'function') chat.tool_choice = { type: 'function', function: { name: calledName(tools.names, named) } }
  } else {
    delete chat.parallel_tool_calls
  }
  const format = asRecord(asRecord(body.text)?.format)
  if (format?.type === 'json_schema') chat.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict === true } }
  else if (format?.type === 'json_object') chat.response_format = { type: 'json_object' }
  if (body.stream === true) {
    chat.stream = true
    chat.stream_options = { include_usage: true }
  }
  return { chat, notes: tools.notes }
}

/** The upstream's name of a function a call or a tool_choice names (a namespaced one flattened as in tools.ts). */
function calledName(names: ToolNames, record: Record<string, unknown>): string {
  const name = String(record.name)
  return typeof record.namespace === 'string' && record.namespace !== '' ? names.flat(record.namespace, name) : name
}

function appendItem(out: ChatMessage[], item: unknown, index: number, names: ToolNames): void {
  const record = asRecord(item)
  const at = `input[${index}]`
  if (record === undefined) throw invalid(`${at}: must be an input item object.`, at)
  const type = record.type ?? (record.role !== undefined ? 'message' : undefined)
  switch (type) {
    case 'message': {
      const role = record.role === 'developer' ? 'system' : record.role
      if (role !== 'user' && role !== 'assistant' && role !== 'system') throw invalid(`${at}.role: must be "user", "assistant", "system" or "developer".`, `${at}.role`)
      const content = record.content
      if (typeof content === 'string') return void out.push({ role, content })
      if (!Array.isArray(content)) throw invalid(`${at}.content: must be a string or an array of content parts.`, `${at}.content`)
      const parts = content.map((part, position) => contentPart(part, `${at}.content[${position}]`))
      if (role !== 'user' || parts.every((part) => part.type === 'text')) {
        const text = parts.map((part) => {
          if (part.type !== 'text') throw unsupported(`${at}: only user messages may carry images.`, at)
          return part.text as string
        }).join('')
        // An assistant text followed by its function calls makes one chat message, as chat wants.
        return void out.push({ role, content: text })
      }
      return void out.push({ role, content: parts })
    }
    case 'function_call': {
      const call = { id: String(record.call_id), type: 'function', function: { name: calledName(names, record), arguments: typeof record.arguments === 'string' ? record.arguments : JSON.stringify(record.arguments ?? {}) } }
      const last = out[out.length - 1]
      if (last?.role === 'assistant') {
        last.tool_calls = [...((last.tool_calls as unknown[] | undefined) ?? []), call]
        if (last.content === '') last.content = null
      } else out.push({ role: 'assistant', content: null, tool_calls: [call] })
      return
    }
    case 'function_call_output': {
      const output = record.output
      const text = typeof output === 'string' ? output : Array.isArray(output) ? output.map((part, position) => textOf(part, `${at}.output[${position}]`)).join('') : JSON.stringify(output ?? '')
      return void out.push({ role: 'tool', tool_call_id: String(record.call_id), content: text })
    }
    // Reasoning items are the producing model's own (often encrypted): another upstream cannot read them.
    case 'reasoning':
      return
    case 'item_reference':
      throw unsupported(`${at}: item references point at items stored at OpenAI; send the item itself.`, at)
    default:
      throw unsupported(`${at}: input items of type "${String(type)}" cannot be sent to an upstream without the Responses API.`, at)
  }
}

function contentPart(part: unknown, at: string): Record<string, unknown> {
  const record = asRecord(part)
  switch (record?.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      return { type: 'text', text: String(record.text ?? '') }
    case 'refusal':
      return { type: 'text', text: String(record.refusal ?? '') }
    case 'input_image': {
      const url = record.image_url
      if (typeof url !== 'string') throw unsupported(`${at}: images need "image_url" (a URL or data URL) when the upstream has no Responses API; file ids live at OpenAI.`, at)
      const image: Record<string, unknown> = { url }
      if (typeof record.detail === 'string') image.detail = record.detail
      return { type: 'image_url', image_url: image }
    }
    default:
      throw unsupported(`${at}: content of type "${String(record?.type)}" cannot be sent to an upstream without the Responses API.`, at)
  }
}
