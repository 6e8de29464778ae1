/**
 * Anthropic Messages request -> OpenAI chat.completions request, for upstreams that speak only
 * chat. Pure. What chat cannot say faithfully is a TranslationError (a 400), never dropped.
 */
import { invalid, unsupported } from '../../anthropic/errors.ts'
import type { ChatMessage, ChatRequestBody } from '../../types.ts'
import { asRecord, textOf } from '../shared.ts'

/**
 * Translates a Messages body. Ignored on the way (tuning only, documented in docs/api.md):
 * `top_k`, `thinking` (the chat upstream reasons or not on its own), `cache_control`
 * marks, `service_tier`, `container`, `mcp_servers`.
 */
export function messagesToChat(body: Record<string, unknown>): ChatRequestBody {
  const messages: ChatMessage[] = []
  const system = systemText(body.system)
  if (system !== '') messages.push({ role: 'system', content: system })
  const input = body.messages
  if (!Array.isArray(input)) throw invalid('messages: Field required (an array of {role, content}).', 'messages')
  input.forEach((message, index) => appendMessage(messages, message, index))
  const chat: ChatRequestBody = { model: String(body.model), messages }
  if (typeof body.max_tokens === 'number') chat.max_tokens = body.max_tokens
  if (typeof body.temperature === 'number') chat.temperature = body.temperature
  if (typeof body.top_p === 'number') chat.top_p = body.top_p
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) chat.stop = body.stop_sequences
  const user = asRecord(body.metadata)?.user_id
  if (typeof user === 'string' && user !== '') chat.user = user
  const tools = toolsOf(body.tools)
  if (tools.length > 0) {
    chat.tools = tools
    const choice = asRecord(body.tool_choice)
    if (choice !== undefined) {
      if (choice.type === 'any') chat.tool_choice = 'required'
      else if (choice.type === 'none') chat.tool_choice = 'none'
      else if (choice.type === 'tool') chat.tool_choice = { type: 'function', function: { name: String(choice.name) } }
      else chat.tool_choice = 'auto'
      if (choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false
    }
  }
  if (body.stream === true) {
    chat.stream = true
    // The usage chunk gives message_delta its token counts.
    chat.stream_options = { include_usage: true }
  }
  return chat
}

function systemText(system: unknown, at = 'system'): string {
  if (system === undefined || system === null) return ''
  if (typeof system === 'string') return system
  if (!Array.isArray(system)) throw invalid(`${at}: must be a string or an array of text blocks.`, at)
  return system.map((block, index) => {
    const record = asRecord(block)
    if (record?.type !== 'text' || typeof record.text !== 'string') throw invalid(`${at}.${index}: only text blocks are allowed in a system prompt.`, `${at}.${index}`)
    return record.text
  }).join('\n\n')
}

function appendMessage(out: ChatMessage[], message: unknown, index: number): void {
  const record = asRecord(message)
  const role = record?.role
  // A system turn inside the conversation (Claude Code's `mid-conversation-system` beta) stays
  // where it is: chat takes a system message anywhere.
  if (role === 'system') {
    const text = systemText(record!.content, `messages.${index}.content`)
    if (text !== '') out.push({ role: 'system', content: text })
    return
  }
  if (role !== 'user' && role !== 'assistant') throw invalid(`messages.${index}.role: Input should be 'user', 'assistant' or 'system'.`, `messages.${index}.role`)
  const content = record!.content
  if (typeof content === 'string') {
    out.push({ role, content })
    return
  }
  if (!Array.isArray(content)) throw invalid(`messages.${index}.content: must be a string or an array of content blocks.`, `messages.${index}.content`)
  if (role === 'assistant') return appendAssistant(out, content, index)
  // A user turn: tool results become `tool` messages first (they answer the assistant's calls
  // just before), then whatever text and images the turn also carries.
  const parts: Record<string, unknown>[] = []
  content.forEach((block, position) => {
    const part = asRecord(block)
    const at = `messages.${index}.content.${position}`
    switch (part?.type) {
      case 'text':
        parts.push({ type: 'text', text: String(part.text ?? '') })
        return
      case 'image':
        parts.push({ type: 'image_url', image_url: { url: imageUrl(part.source, at) } })
        return
      case 'tool_result': {
        const text = typeof part.content === 'string' ? part.content : toolResultText(part.content, at)
        out.push({ role: 'tool', tool_call_id: String(part.tool_use_id), content: part.is_error === true ? `Error: ${text}` : text })
        return
      }
      case 'document': {
        const source = asRecord(part.source)
        if (source?.type === 'text' && typeof source.data === 'string') {
          parts.push({ type: 'text', text: source.data })
          return
        }
        throw unsupported(`${at}: this upstream speaks OpenAI chat, which takes documents only as plain text (source.type "text").`, at)
      }
      case 'thinking':
      case 'redacted_thinking':
        return
      default:
        throw unsupported(`${at}: content block type "${String(part?.type)}" cannot be sent to an OpenAI chat upstream.`, at)
    }
  })
  if (parts.length === 0) return
  const onlyText = parts.every((part) => part.type === 'text')
  out.push({ role: 'user', content: onlyText ? parts.map((part) => part.text).join('\n') : parts })
}

function appendAssistant(out: ChatMessage[], content: unknown[], index: number): void {
  let text = ''
  const calls: Record<string, unknown>[] = []
  content.forEach((block, position) => {
    const part = asRecord(block)
    switch (part?.type) {
      case 'text':
        text += String(part.text ?? '')
        return
      case 'tool_use':
        calls.push({ id: String(part.id), type: 'function', function: { name: String(part.name), arguments: JSON.stringify(part.input ?? {}) } })
        return
      // Thinking belongs to the model that produced it; a chat upstream cannot take it back.
      case 'thinking':
      case 'redacted_thinking':
        return
      default: {
        const at = `messages.${index}.content.${position}`
        throw unsupported(`${at}: assistant block type "${String(part?.type)}" cannot be sent to an OpenAI chat upstream.`, at)
      }
    }
  })
  const message: ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text }
  if (calls.length > 0) message.tool_calls = calls
  out.push(message)
}

function imageUrl(source: unknown, at: string): string {
  const record = asRecord(source)
  if (record?.type === 'base64') return `data:${String(record.media_type)};base64,${String(record.data)}`
  if (record?.type === 'url' && typeof record.url === 'string') return record.url
  throw unsupported(`${at}.source: images must be base64 or url sources.`, `${at}.source`)
}

function toolResultText(content: unknown, at: string): string {
  if (content === undefined || content === null) return ''
  if (!Array.isArray(content)) throw invalid(`${at}.content: must be a string or an array of blocks.`, `${at}.content`)
  return content.map((block) => textOf(block, `${at}.content`)).join('\n')
}

function toolsOf(tools: unknown): Record<string, unknown>[] {
  if (tools === undefined || tools === null) return []
  if (!Array.isArray(tools)) throw invalid('tools: must be an array.', 'tools')
  return tools.map((tool, index) => {
    const record = asRecord(tool)
    // Server tools (web_search_20250305, bash_20250124, ...) run at Anthropic only.
    if (record === undefined || typeof record.name !== 'string' || (record.type !== undefined && record.type !== 'custom')) throw unsupported(`tools.${index}: only client tools ({name, description, input_schema}) can be sent to an OpenAI chat upstream; "${String(record?.type)}" is an Anthropic server tool.`, `tools.${index}`)
    const fn: Record<string, unknown> = { name: record.name, parameters: record.input_schema ?? { type: 'object', properties: {} } }
    if (typeof record.description === 'string') fn.description = record.description
    return { type: 'function', function: fn }
  })
}
