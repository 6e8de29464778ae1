/**
 * OpenAI chat.completions <-> Gemini generateContent (the Gemini API and Vertex AI speak the same
 * body). The conversation goes through the Anthropic translation first, as for Bedrock (the same
 * rules: what cannot be honoured is a 400), then Anthropic's blocks map onto Gemini's parts.
 */
import { TranslationError, unsupported } from '../anthropic/errors.ts'
import { type FinishReason, toOpenAIUsage, type OpenAIUsage } from '../anthropic/finish.ts'
import { asRecord, blocksOf, type AnthropicBlock, type AnthropicConversation, type AnthropicMessage } from '../anthropic/messages.ts'
import { toAnthropicRequest } from '../anthropic/request.ts'
import { chatCompletion } from '../anthropic/response.ts'
import type { ChatRequestBody } from '../types.ts'

/** Gemini finish reasons -> OpenAI's. Unknown ones are `stop`, so a new value never breaks an answer that arrived whole. */
export function finishReasonOf(reason: unknown, calledTools: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length'
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter'
  return calledTools ? 'tool_calls' : 'stop'
}

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'])

/** Gemini's usageMetadata -> OpenAI usage (cached tokens are part of promptTokenCount already). */
export function usageOf(metadata: unknown): OpenAIUsage {
  const usage = asRecord(metadata)
  const count = (name: string): number | undefined => (typeof usage?.[name] === 'number' ? usage[name] as number : undefined)
  // Thinking tokens are billed as output: OpenAI counts reasoning inside completion_tokens too.
  const completion = (count('candidatesTokenCount') ?? 0) + (count('thoughtsTokenCount') ?? 0)
  return toOpenAIUsage({ promptTokens: count('promptTokenCount') ?? 0, cachedTokens: count('cachedContentTokenCount') ?? 0, completionTokens: completion })
}

/** OpenAI chat body -> generateContent body (the model travels in the path). */
export function toGenerateContentRequest(body: ChatRequestBody, model: string): Record<string, unknown> {
  // Gemini honours JSON schemas (Anthropic's translation refuses them): response_format is read here.
  const { response_format: responseFormat, ...rest } = body
  const anthropic = toAnthropicRequest({ ...rest, stream: false }, model)
  const request: Record<string, unknown> = {}
  const system = anthropic.system as AnthropicConversation['system']
  if (system !== undefined) request.systemInstruction = { parts: blocksOf(system).map((block, index) => part(block, `system[${index}]`, new Map())) }
  // functionResponse names its function; a tool result carries only the call's id.
  const names = new Map<string, string>()
  request.contents = (anthropic.messages as AnthropicMessage[]).map((message, index) => ({
    role: message.role === 'assistant' ? 'model' : 'user',
    parts: blocksOf(message.content).map((block) => part(block, `messages[${index}]`, names)),
  }))
  const generation: Record<string, unknown> = {}
  const maxTokens = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : undefined
  if (maxTokens !== undefined) generation.maxOutputTokens = maxTokens
  // Gemini takes OpenAI's whole 0..2 temperature range, so it is sent unclamped.
  if (typeof body.temperature === 'number') generation.temperature = body.temperature
  if (anthropic.top_p !== undefined) generation.topP = anthropic.top_p
  if (anthropic.stop_sequences !== undefined) generation.stopSequences = anthropic.stop_sequences
  if (typeof body.seed === 'number') generation.seed = body.seed
  const format = asRecord(responseFormat)
  if (format?.type === 'json_object') generation.responseMimeType = 'application/json'
  if (format?.type === 'json_schema') {
    const schema = asRecord(format.json_schema)?.schema
    if (asRecord(schema) === undefined) throw unsupported('response_format.json_schema.schema: give the JSON schema the answer must follow.', 'response_format')
    generation.responseMimeType = 'application/json'
    generation.responseJsonSchema = schema
  }
  if (Object.keys(generation).length > 0) request.generationConfig = generation
  const tools = anthropic.tools as Array<{ name: string; description?: string; input_schema: unknown }> | undefined
  if (tools !== undefined) {
    const declarations = tools.map((tool) => ({ name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parametersJsonSchema: tool.input_schema }))
    request.tools = [{ functionDeclarations: declarations }]
    const choice = asRecord(anthropic.tool_choice)
    const mode = choice?.type === 'none' ? 'NONE' : choice?.type === 'any' || choice?.type === 'tool' ? 'ANY' : 'AUTO'
    request.toolConfig = { functionCallingConfig: { mode, ...(choice?.type === 'tool' ? { allowedFunctionNames: [choice.name] } : {}) } }
  }
  return request
}

function part(block: AnthropicBlock, field: string, names: Map<string, string>): Record<string, unknown> {
  switch (block.type) {
    case 'text':
      return { text: block.text }
    case 'image': {
      const source = asRecord(block.source)
      if (source?.type === 'base64') return { inlineData: { mimeType: source.media_type, data: source.data } }
      if (source?.type === 'url' && typeof source.url === 'string') return { fileData: { fileUri: source.url } }
      throw unsupported(`${field}: Gemini takes images inline (a data: URL) or as a file URI.`, field)
    }
    case 'tool_use':
      names.set(String(block.id), String(block.name))
      return { functionCall: { name: block.name, args: block.input ?? {} } }
    case 'tool_result': {
      const name = names.get(String(block.tool_use_id))
      if (name === undefined) throw unsupported(`${field}: a tool result must follow the assistant message that called the tool (Gemini names the function, not the call id).`, field)
      const content = block.content === undefined ? '' : blocksOf(block.content as AnthropicMessage['content']).map((inner) => (inner.type === 'text' ? inner.text : '')).join('')
      return { functionResponse: { name, response: block.is_error === true ? { error: content } : { content } } }
    }
    default:
      throw unsupported(`${field}: a "${block.type}" part cannot be sent to Gemini.`, field)
  }
}

/** The parts of a candidate as OpenAI message content and tool calls; `callId` numbers calls without an id of their own. */
export function readParts(parts: unknown, callId: (index: number) => string): { text: string; toolCalls: Array<Record<string, unknown>> } {
  let text = ''
  const toolCalls: Array<Record<string, unknown>> = []
  if (!Array.isArray(parts)) return { text, toolCalls }
  for (const entry of parts) {
    const item = asRecord(entry)
    // Thought summaries (`thought: true`) are not the answer; OpenAI's message has no field for them.
    if (typeof item?.text === 'string' && item.thought !== true) text += item.text
    const call = asRecord(item?.functionCall)
    if (call !== undefined) {
      toolCalls.push({ id: typeof call.id === 'string' ? call.id : callId(toolCalls.length), type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } })
    }
  }
  return { text, toolCalls }
}

/** generateContent answer -> OpenAI chat.completion; `model` is the name the caller asked for. */
export function fromGenerateContentResponse(answer: unknown, model: string, createdSeconds: number, id: string): Record<string, unknown> {
  const record = asRecord(answer)
  if (record === undefined) throw new TranslationError('upstream_malformed', 'Gemini answered with a body that is not a GenerateContentResponse.')
  const candidate = asRecord(Array.isArray(record.candidates) ? record.candidates[0] : undefined)
  if (candidate === undefined && asRecord(record.promptFeedback)?.blockReason === undefined) throw new TranslationError('upstream_malformed', 'Gemini answered with no candidates and no promptFeedback.')
  const { text, toolCalls } = readParts(asRecord(candidate?.content)?.parts, (index) => `call_${id}_${index}`)
  // A prompt blocked before any candidate is a content filter, as OpenAI reports one.
  const finish = candidate === undefined ? 'content_filter' : finishReasonOf(candidate.finishReason, toolCalls.length > 0)
  return chatCompletion(id, model, createdSeconds, toolCalls.length > 0 && text === '' ? null : text, toolCalls, finish, usageOf(record.usageMetadata))
}
