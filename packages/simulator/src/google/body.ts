/** Gemini generateContent bodies (Gemini API and Vertex AI alike): validation and answers. */
import { isFields, type ChatRequest, type Fields, type Refusal } from '../dialects/dialect.ts'
import { estimateTokens, partCharacters, splitForStream, toolArguments, type Reply } from '../reply/content.ts'

/** Characters of the text, function calls and function responses of a list of parts, for the token estimate. */
function characters(parts: unknown): number {
  return partCharacters(parts, (part) => (isFields(part.functionCall) ? JSON.stringify(part.functionCall.args ?? {}).length : 0)
    + (isFields(part.functionResponse) ? JSON.stringify(part.functionResponse.response ?? {}).length : 0))
}

/** Validates a generateContent body (refusals in Google's INVALID_ARGUMENT wording); `model` comes from the path. */
export function parseGenerateContent(body: Fields, model: string, stream: boolean): ChatRequest | Refusal {
  if (!Array.isArray(body.contents) || body.contents.length === 0) {
    return { refusal: '* GenerateContentRequest.contents: contents is not specified' }
  }
  let total = isFields(body.systemInstruction) ? characters(body.systemInstruction.parts) : 0
  for (const [index, content] of (body.contents as unknown[]).entries()) {
    if (!isFields(content) || !Array.isArray(content.parts) || content.parts.length === 0) {
      return { refusal: `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.` }
    }
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'model' && content.role !== 'function') {
      return { refusal: `Please use a valid role: user, model.` }
    }
    total += characters(content.parts)
  }
  const maxTokens = isFields(body.generationConfig) ? body.generationConfig.maxOutputTokens : undefined
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)) {
    return { refusal: '* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.' }
  }
  return {
    model,
    stream,
    promptTokens: estimateTokens(total),
    maxTokens: maxTokens as number | undefined,
    tool: forcedTool(body.tools, body.toolConfig),
  }
}

/** The function `toolConfig.functionCallingConfig.mode: "ANY"` forces: the first allowed one, else the first declared. */
function forcedTool(tools: unknown, config: unknown): ChatRequest['tool'] {
  const calling = isFields(config) && isFields(config.functionCallingConfig) ? config.functionCallingConfig : undefined
  if (calling?.mode !== 'ANY' || !Array.isArray(tools)) return undefined
  const declarations = tools.flatMap((tool) => (isFields(tool) && Array.isArray(tool.functionDeclarations) ? tool.functionDeclarations as unknown[] : []))
    .flatMap((declaration) => (isFields(declaration) && typeof declaration.name === 'string' ? [{ name: declaration.name, schema: declaration.parameters ?? declaration.parametersJsonSchema }] : []))
  const allowed = Array.isArray(calling.allowedFunctionNames) ? calling.allowedFunctionNames : undefined
  return allowed === undefined ? declarations[0] : declarations.find((declaration) => allowed.includes(declaration.name))
}

function finishReason(chat: ChatRequest, reply: Reply): string {
  return chat.tool === undefined && reply.truncated ? 'MAX_TOKENS' : 'STOP'
}

/** One GenerateContentResponse with `text` (or the forced function call); the last one carries finishReason and the full usage. */
export function contentResponse(chat: ChatRequest, reply: Reply, text: string, last: boolean, responseId: string): Fields {
  const parts = chat.tool === undefined ? [{ text }] : [{ functionCall: { name: chat.tool.name, args: toolArguments(chat.tool.schema) } }]
  const completion = reply.completionTokens
  return {
    candidates: [{ content: { role: 'model', parts }, ...(last ? { finishReason: finishReason(chat, reply) } : {}), index: 0 }],
    // Gemini reports usage on every chunk; only the last one's candidate count is the whole answer's.
    usageMetadata: last
      ? { promptTokenCount: chat.promptTokens, candidatesTokenCount: completion, totalTokenCount: chat.promptTokens + completion }
      : { promptTokenCount: chat.promptTokens, totalTokenCount: chat.promptTokens },
    modelVersion: chat.model,
    responseId,
  }
}

/** A streamGenerateContent answer (`alt=sse`) as GenerateContentResponse objects: text in pieces, a function call whole. */
export function generateContentChunks(chat: ChatRequest, reply: Reply, responseId: string): Fields[] {
  const pieces = chat.tool === undefined ? splitForStream(reply.text) : ['']
  return pieces.map((piece, index) => contentResponse(chat, reply, piece, index === pieces.length - 1, responseId))
}

/** Server-sent events as Gemini frames them (`data: ...` and a CRLF blank line). */
export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\r\n\r\n`
}
