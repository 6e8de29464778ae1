/**
 * OpenAI chat.completions <-> Bedrock Converse, through the Anthropic translation (the same rules:
 * what cannot be honoured is a 400): Anthropic's blocks map one to one onto Converse's, and the
 * answer comes back the same way round, so both report finish reasons, tool calls and usage alike.
 */
import { TranslationError, unsupported } from '../anthropic/errors.ts'
import { asRecord, blocksOf, type AnthropicBlock, type AnthropicConversation, type AnthropicMessage } from '../anthropic/messages.ts'
import { toAnthropicRequest } from '../anthropic/request.ts'
import { fromAnthropicResponse } from '../anthropic/response.ts'
import type { ChatRequestBody } from '../types.ts'

/** Converse's image formats (`image.format`), by media type. */
const IMAGE_FORMATS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' }

/** Converse stop reasons Anthropic names otherwise (the rest are the same words). */
const STOP_REASONS: Record<string, string> = { guardrail_intervened: 'refusal', content_filtered: 'refusal' }

/** OpenAI chat body -> Converse body (the model id travels in the path, not the body). */
export function toConverseRequest(body: ChatRequestBody, model: string): Record<string, unknown> {
  const anthropic = toAnthropicRequest({ ...body, stream: false }, model)
  const converse: Record<string, unknown> = {}
  const system = anthropic.system as AnthropicConversation['system']
  if (system !== undefined) converse.system = blocksOf(system).map((block, index) => converseBlock(block, `system[${index}]`))
  converse.messages = (anthropic.messages as AnthropicMessage[]).map((message, index) => ({ role: message.role, content: blocksOf(message.content).map((block) => converseBlock(block, `messages[${index}]`)) }))
  const inference: Record<string, unknown> = { maxTokens: anthropic.max_tokens }
  if (anthropic.temperature !== undefined) inference.temperature = anthropic.temperature
  if (anthropic.top_p !== undefined) inference.topP = anthropic.top_p
  if (anthropic.stop_sequences !== undefined) inference.stopSequences = anthropic.stop_sequences
  converse.inferenceConfig = inference
  const tools = anthropic.tools as Array<{ name: string; description?: string; input_schema: unknown }> | undefined
  const choice = asRecord(anthropic.tool_choice)
  // Converse has no "none": the tools are left out, as a model that may not call them need not see them.
  if (tools !== undefined && choice?.type !== 'none') {
    const specs = tools.map((tool) => ({ toolSpec: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: { json: tool.input_schema } } }))
    const toolConfig: Record<string, unknown> = { tools: specs }
    if (choice?.type === 'any') toolConfig.toolChoice = { any: {} }
    else if (choice?.type === 'tool') toolConfig.toolChoice = { tool: { name: choice.name } }
    else if (choice?.type === 'auto') toolConfig.toolChoice = { auto: {} }
    converse.toolConfig = toolConfig
  }
  return converse
}

function converseBlock(block: AnthropicBlock, field: string): Record<string, unknown> {
  switch (block.type) {
    case 'text':
      return { text: block.text }
    case 'image': {
      const source = asRecord(block.source)
      const format = typeof source?.media_type === 'string' ? IMAGE_FORMATS[source.media_type] : undefined
      if (source?.type !== 'base64' || format === undefined) throw unsupported(`${field}: Bedrock takes images inline only (a data: URL of a png, jpeg, gif or webp image).`, field)
      return { image: { format, source: { bytes: source.data } } }
    }
    case 'tool_use':
      return { toolUse: { toolUseId: block.id, name: block.name, input: block.input ?? {} } }
    case 'tool_result': {
      const content = block.content === undefined ? [] : blocksOf(block.content as AnthropicMessage['content']).map((inner) => converseBlock(inner, field))
      return { toolResult: { toolUseId: block.tool_use_id, content, ...(block.is_error === true ? { status: 'error' } : {}) } }
    }
    default:
      throw unsupported(`${field}: a "${block.type}" part cannot be sent to Bedrock.`, field)
  }
}

/** Converse answer -> OpenAI chat.completion; `model` is the name the caller asked for. */
export function fromConverseResponse(answer: unknown, model: string, createdSeconds: number, id: string): Record<string, unknown> {
  const record = asRecord(answer)
  const message = asRecord(asRecord(record?.output)?.message)
  if (message === undefined || !Array.isArray(message.content)) throw new TranslationError('upstream_malformed', 'Bedrock answered with a body that is not a Converse response (no output.message.content).')
  const content: AnthropicBlock[] = []
  for (const entry of message.content as unknown[]) {
    const block = asRecord(entry)
    if (typeof block?.text === 'string') content.push({ type: 'text', text: block.text })
    const toolUse = asRecord(block?.toolUse)
    if (toolUse !== undefined) content.push({ type: 'tool_use', id: toolUse.toolUseId, name: toolUse.name, input: toolUse.input })
  }
  return fromAnthropicResponse({ id, content, stop_reason: anthropicStopReason(record?.stopReason), usage: anthropicUsage(record?.usage) }, model, createdSeconds)
}

/** A Converse stop reason as the Anthropic one finishReasonFor reads (also for ConverseStream). */
export function anthropicStopReason(reason: unknown): string | null {
  return typeof reason === 'string' ? (STOP_REASONS[reason] ?? reason) : null
}

/** Converse `usage` in Anthropic's words (cache writes are its cache creation), read by the same rules (also for ConverseStream). */
export function anthropicUsage(usage: unknown): Record<string, unknown> {
  const record = asRecord(usage)
  return { input_tokens: record?.inputTokens, output_tokens: record?.outputTokens, cache_read_input_tokens: record?.cacheReadInputTokens, cache_creation_input_tokens: record?.cacheWriteInputTokens }
}
