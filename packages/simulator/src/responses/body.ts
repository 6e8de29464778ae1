/** OpenAI's Responses API bodies and stream events, as OpenAI (and Azure's v1 API) send them. */
import { forcedTool, type Answer, type ChatRequest } from '../dialects/dialect.ts'
import type { Refuse } from '../openai/body.ts'
import { countText, estimateTokens, splitEvery, splitForStream, toolArguments, type Reply } from '../reply/content.ts'

/** Validates a Responses body the way OpenAI does; the model is the Azure deployment there. */
export function parseResponsesBody(body: Record<string, unknown>, refuse: Refuse): ChatRequest | Answer {
  const model = body.model
  if (typeof model !== 'string' || model.length === 0) return refuse("Missing required parameter: 'model'.", 'model', 'missing_required_parameter')
  const input = body.input
  if (input === undefined && body.previous_response_id === undefined) return refuse("Missing required parameter: 'input'.", 'input', 'missing_required_parameter')
  if (input !== undefined && typeof input !== 'string' && !Array.isArray(input)) return refuse("Invalid type for 'input': expected a string or an array of input items.", 'input', 'invalid_type')
  return {
    model,
    stream: body.stream === true,
    includeUsage: true,
    promptTokens: estimateTokens(inputCharacters(input) + (typeof body.instructions === 'string' ? body.instructions.length : 0)),
    maxTokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined,
    tool: toolChoice(body.tools, body.tool_choice),
  }
}

function inputCharacters(input: unknown): number {
  if (typeof input === 'string') return input.length
  if (!Array.isArray(input)) return 0
  let total = 0
  for (const item of input) {
    const record = item as { content?: unknown; output?: unknown; arguments?: unknown } | null
    total += countText(record?.content)
    if (typeof record?.output === 'string') total += record.output.length
    if (typeof record?.arguments === 'string') total += record.arguments.length
  }
  return total
}

/** The function a request forces with `tool_choice: "required"` or `{type: "function", name}`. */
function toolChoice(tools: unknown, choice: unknown): ChatRequest['tool'] {
  if (!Array.isArray(tools)) return undefined
  const functions = tools.filter((tool): tool is { type: string; name: string; parameters?: unknown } => (tool as { type?: unknown })?.type === 'function' && typeof (tool as { name?: unknown }).name === 'string')
    .map((fn) => ({ name: fn.name, schema: fn.parameters }))
  if (choice === 'required') return forcedTool(functions, undefined)
  const named = (choice as { type?: unknown; name?: unknown } | null)?.name
  return (choice as { type?: unknown } | null)?.type === 'function' && typeof named === 'string' ? forcedTool(functions, named) : undefined
}

type Ids = Record<'response' | 'item' | 'call', string>

function usage(chat: ChatRequest, reply: Reply) {
  return {
    input_tokens: chat.promptTokens, input_tokens_details: { cached_tokens: 0 },
    output_tokens: reply.completionTokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: chat.promptTokens + reply.completionTokens,
  }
}

function outputItem(chat: ChatRequest, reply: Reply, ids: Ids): Record<string, unknown> {
  if (chat.tool !== undefined) {
    return { type: 'function_call', id: ids.item, call_id: ids.call, name: chat.tool.name, arguments: JSON.stringify(toolArguments(chat.tool.schema)), status: 'completed' }
  }
  return { type: 'message', id: ids.item, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: reply.text, annotations: [], logprobs: [] }] }
}

/** A `response` object: in progress, or (`done`) with its output and usage. */
export function responseObject(chat: ChatRequest, reply: Reply, ids: Ids, created: number, done: boolean): Record<string, unknown> {
  const truncated = reply.truncated && chat.tool === undefined
  return {
    id: ids.response, object: 'response', created_at: created,
    status: done ? (truncated ? 'incomplete' : 'completed') : 'in_progress',
    error: null, incomplete_details: done && truncated ? { reason: 'max_output_tokens' } : null,
    instructions: null, max_output_tokens: chat.maxTokens ?? null, model: chat.model,
    output: done ? [outputItem(chat, reply, ids)] : [],
    parallel_tool_calls: true, previous_response_id: null, reasoning: { effort: null, summary: null }, store: true,
    temperature: 1, text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], top_p: 1, truncation: 'disabled',
    usage: done ? usage(chat, reply) : null, user: null, metadata: {},
  }
}

/** The SSE events of a streamed response, in OpenAI's order, numbered by `sequence_number`. */
export function responseEvents(chat: ChatRequest, reply: Reply, ids: Ids, created: number): string[] {
  let sequence = 0
  const events: string[] = []
  const push = (type: string, fields: Record<string, unknown>) => {
    events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`)
  }
  push('response.created', { response: responseObject(chat, reply, ids, created, false) })
  push('response.in_progress', { response: responseObject(chat, reply, ids, created, false) })
  const done = outputItem(chat, reply, ids)
  if (chat.tool !== undefined) {
    push('response.output_item.added', { output_index: 0, item: { ...done, arguments: '', status: 'in_progress' } })
    for (const piece of splitEvery(String(done.arguments), 8)) push('response.function_call_arguments.delta', { item_id: ids.item, output_index: 0, delta: piece })
    push('response.function_call_arguments.done', { item_id: ids.item, output_index: 0, arguments: done.arguments })
  } else {
    push('response.output_item.added', { output_index: 0, item: { ...done, status: 'in_progress', content: [] } })
    push('response.content_part.added', { item_id: ids.item, output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } })
    for (const piece of splitForStream(reply.text)) push('response.output_text.delta', { item_id: ids.item, output_index: 0, content_index: 0, delta: piece, logprobs: [] })
    push('response.output_text.done', { item_id: ids.item, output_index: 0, content_index: 0, text: reply.text, logprobs: [] })
    push('response.content_part.done', { item_id: ids.item, output_index: 0, content_index: 0, part: { type: 'output_text', text: reply.text, annotations: [], logprobs: [] } })
  }
  push('response.output_item.done', { output_index: 0, item: done })
  const final = responseObject(chat, reply, ids, created, true)
  push(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final })
  return events
}
