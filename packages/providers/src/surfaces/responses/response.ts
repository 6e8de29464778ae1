/** OpenAI chat.completion -> Responses `response` object (non-streaming). Pure. */
import { asRecord, chatUsage, newId, toolCallPieces } from '../shared.ts'
import { toolNamesOf } from './tools.ts'

/** A `response` object (`incomplete` when the token limit cut it), with the request fields it echoes back. */
export function responseObject(id: string, createdAt: number, model: string, request: Record<string, unknown>, status: string, output: unknown[], usage: unknown): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model,
    output,
    instructions: typeof request.instructions === 'string' ? request.instructions : null,
    max_output_tokens: typeof request.max_output_tokens === 'number' ? request.max_output_tokens : null,
    parallel_tool_calls: request.parallel_tool_calls !== false,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: typeof request.temperature === 'number' ? request.temperature : 1,
    text: { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: Array.isArray(request.tools) ? request.tools : [],
    top_p: typeof request.top_p === 'number' ? request.top_p : 1,
    truncation: 'disabled',
    user: typeof request.user === 'string' ? request.user : null,
    metadata: asRecord(request.metadata) ?? {},
    usage,
  }
}

/** Responses `usage` from chat usage counts. */
export function responseUsage(usage: ReturnType<typeof chatUsage>): Record<string, unknown> {
  const { promptTokens, completionTokens, cachedTokens, reasoningTokens } = usage
  return { input_tokens: promptTokens, input_tokens_details: { cached_tokens: cachedTokens }, output_tokens: completionTokens, output_tokens_details: { reasoning_tokens: reasoningTokens }, total_tokens: promptTokens + completionTokens }
}

/** Translates a chat completion into a `response`; `model` is what the caller asked for. */
export function chatToResponse(chat: Record<string, unknown>, model: string, request: Record<string, unknown>): Record<string, unknown> {
  const choice = asRecord((Array.isArray(chat.choices) ? chat.choices : [])[0])
  const message = asRecord(choice?.message)
  const output: Record<string, unknown>[] = []
  if (typeof message?.content === 'string' && message.content !== '') {
    output.push({ type: 'message', id: newId('msg_'), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: message.content, annotations: [], logprobs: [] }] })
  }
  const calls = toolCallPieces(message)
  const names = calls.length > 0 ? toolNamesOf(request) : undefined
  for (const { id, name, piece } of calls) {
    // A namespaced tool's call gets its own name and namespace back, as OpenAI answers it.
    output.push({ type: 'function_call', id: newId('fc_'), call_id: String(id ?? newId('call_')), ...names!.callName(String(name ?? '')), arguments: String(piece ?? ''), status: 'completed' })
  }
  const createdAt = typeof chat.created === 'number' ? chat.created : Math.floor(Date.now() / 1000)
  const status = choice?.finish_reason === 'length' ? 'incomplete' : 'completed'
  return responseObject(newId('resp_'), createdAt, model, request, status, output, responseUsage(chatUsage(chat.usage)))
}
