import { forcedTool, isFields, type ChatRequest, type Refusal } from '../dialects/dialect.ts'
import { estimateTokens, promptCharacters, splitEvery, splitForStream, toolArguments, type Reply } from '../reply/content.ts'

/** Validates a Messages API body the way Anthropic does (refusals in its `field: problem` wording). */
export function parseMessagesBody(body: Record<string, unknown>): ChatRequest | Refusal {
  if (typeof body.model !== 'string' || body.model.length === 0) return { refusal: 'model: Field required' }
  if (!Array.isArray(body.messages)) return { refusal: 'messages: Field required' }
  if (body.max_tokens === undefined) return { refusal: 'max_tokens: Field required' }
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    return { refusal: 'max_tokens: Input should be a valid integer greater than or equal to 1' }
  }
  return {
    model: body.model,
    stream: body.stream === true,
    promptTokens: estimateTokens(promptCharacters(body.messages, body.system)),
    maxTokens: body.max_tokens,
    tool: toolChoice(body.tools, body.tool_choice),
  }
}

/** The tool a request forces with `tool_choice` `{type: "tool", name}` or `{type: "any"}`. */
function toolChoice(tools: unknown, choice: unknown): ChatRequest['tool'] {
  if (!Array.isArray(tools) || tools.length === 0 || !isFields(choice)) return undefined
  const declared = tools.filter((tool): tool is { name: string; input_schema?: unknown } => typeof (tool as { name?: unknown } | null)?.name === 'string')
    .map((tool) => ({ name: tool.name, schema: tool.input_schema }))
  if (choice.type === 'any') return forcedTool(declared, undefined)
  return choice.type === 'tool' && typeof choice.name === 'string' ? forcedTool(declared, choice.name) : undefined
}

/** Why the model stopped, in Anthropic's words (Bedrock's Converse uses the same). */
export function stopReason(chat: ChatRequest, reply: Reply): string {
  if (chat.tool !== undefined) return 'tool_use'
  return reply.truncated ? 'max_tokens' : 'end_turn'
}

function inputUsage(chat: ChatRequest) {
  return { input_tokens: chat.promptTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
}

/** A `message` object. */
export function messageBody(chat: ChatRequest, reply: Reply, id: string, toolId: string): string {
  const content = chat.tool === undefined
    ? [{ type: 'text', text: reply.text }]
    : [{ type: 'tool_use', id: toolId, name: chat.tool.name, input: toolArguments(chat.tool.schema) }]
  return JSON.stringify({
    id, type: 'message', role: 'assistant', model: chat.model, content,
    stop_reason: stopReason(chat, reply), stop_sequence: null,
    usage: { ...inputUsage(chat), output_tokens: reply.completionTokens, service_tier: 'standard' },
  })
}

function event(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
}

/** The SSE events of a streamed message, in Anthropic's order. */
export function messageEvents(chat: ChatRequest, reply: Reply, id: string, toolId: string): string[] {
  const events = [
    event('message_start', {
      type: 'message_start',
      message: {
        id, type: 'message', role: 'assistant', model: chat.model, content: [], stop_reason: null, stop_sequence: null,
        usage: { ...inputUsage(chat), output_tokens: 1, service_tier: 'standard' },
      },
    }),
  ]
  const block = chat.tool === undefined ? { type: 'text', text: '' } : { type: 'tool_use', id: toolId, name: chat.tool.name, input: {} }
  const deltas = chat.tool === undefined
    ? splitForStream(reply.text).map((text) => ({ type: 'text_delta', text }))
    : splitEvery(JSON.stringify(toolArguments(chat.tool.schema)), 8).map((json) => ({ type: 'input_json_delta', partial_json: json }))
  events.push(event('content_block_start', { type: 'content_block_start', index: 0, content_block: block }), event('ping', { type: 'ping' }))
  for (const delta of deltas) events.push(event('content_block_delta', { type: 'content_block_delta', index: 0, delta }))
  events.push(event('content_block_stop', { type: 'content_block_stop', index: 0 }))
  events.push(event('message_delta', {
    type: 'message_delta', delta: { stop_reason: stopReason(chat, reply), stop_sequence: null },
    usage: { output_tokens: reply.completionTokens },
  }))
  events.push(event('message_stop', { type: 'message_stop' }))
  return events
}

/** A stream that breaks off halfway with Anthropic's in-band `overloaded_error` event (with the request id where Anthropic answers itself). */
export function messageErrorEvents(events: string[], message: string | undefined, requestId?: string): string[] {
  const chunks = events.slice(0, Math.max(3, Math.floor(events.length / 2)))
  chunks.push(event('error', { type: 'error', error: { type: 'overloaded_error', message: message ?? 'Overloaded' }, ...(requestId === undefined ? {} : { request_id: requestId }) }))
  return chunks
}
