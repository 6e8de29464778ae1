/** Bedrock Converse bodies: validation the way Bedrock words it, and the answer. */
import { forcedTool, isFields, type ChatRequest, type Fields, type Refusal } from '../dialects/dialect.ts'
import { estimateTokens, partCharacters, splitEvery, splitForStream, toolArguments, type Reply } from '../reply/content.ts'
import { stopReason } from '../anthropic/body.ts'
import { eventFrame } from './eventstream.ts'

/** Characters of every text part (messages and system), tool use and tool result, for the token estimate. */
function textCharacters(blocks: unknown): number {
  return partCharacters(blocks, (block) => (isFields(block.toolResult) ? textCharacters(block.toolResult.content) : 0)
    + (isFields(block.toolUse) ? JSON.stringify(block.toolUse.input ?? {}).length : 0))
}

/** Validates a Converse body (refusals in Bedrock's ValidationException wording); `modelId` comes from the path. */
export function parseConverseBody(body: Fields, modelId: string, stream: boolean): ChatRequest | Refusal {
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return { refusal: '1 validation error detected: Value null at \'messages\' failed to satisfy constraint: Member must not be null' }
  }
  let characters = textCharacters(body.system)
  for (const [index, message] of (body.messages as unknown[]).entries()) {
    if (!isFields(message) || (message.role !== 'user' && message.role !== 'assistant') || !Array.isArray(message.content)) {
      return { refusal: `1 validation error detected: Value at 'messages.${index + 1}.member' failed to satisfy constraint: Member must have role user or assistant and a content list` }
    }
    characters += textCharacters(message.content)
  }
  if ((body.messages as Fields[])[0]!.role !== 'user') return { refusal: 'A conversation must start with a user message. Try again with a conversation that starts with a user message.' }
  const maxTokens = isFields(body.inferenceConfig) ? body.inferenceConfig.maxTokens : undefined
  if (maxTokens !== undefined && (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1)) {
    return { refusal: "1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1" }
  }
  return {
    model: modelId,
    stream,
    promptTokens: estimateTokens(characters),
    maxTokens: maxTokens as number | undefined,
    tool: toolChoice(body.toolConfig),
  }
}

/** The tool a `toolConfig.toolChoice` of `{tool: {name}}` or `{any: {}}` forces. */
function toolChoice(config: unknown): ChatRequest['tool'] {
  if (!isFields(config) || !Array.isArray(config.tools) || !isFields(config.toolChoice)) return undefined
  const specs = (config.tools as unknown[]).flatMap((tool) => (isFields(tool) && isFields(tool.toolSpec) && typeof tool.toolSpec.name === 'string'
    ? [{ name: tool.toolSpec.name, schema: isFields(tool.toolSpec.inputSchema) ? tool.toolSpec.inputSchema.json : undefined }]
    : []))
  const choice = config.toolChoice
  if (isFields(choice.any)) return forcedTool(specs, undefined)
  return isFields(choice.tool) && typeof choice.tool.name === 'string' ? forcedTool(specs, choice.tool.name) : undefined
}

function usage(chat: ChatRequest, reply: Reply) {
  return { inputTokens: chat.promptTokens, outputTokens: reply.completionTokens, totalTokens: chat.promptTokens + reply.completionTokens }
}

/** A Converse answer. */
export function converseBody(chat: ChatRequest, reply: Reply, toolId: string, latencyMs: number): string {
  const content = chat.tool === undefined
    ? [{ text: reply.text }]
    : [{ toolUse: { toolUseId: toolId, name: chat.tool.name, input: toolArguments(chat.tool.schema) } }]
  return JSON.stringify({ output: { message: { role: 'assistant', content } }, stopReason: stopReason(chat, reply), usage: usage(chat, reply), metrics: { latencyMs } })
}

/** Padding Bedrock adds to every stream event (`p`) so that event sizes do not reveal the tokens; a client must ignore it. */
const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'

/**
 * A ConverseStream answer as event-stream frames, in Bedrock's order: messageStart,
 * contentBlockStart (tool use only), contentBlockDelta..., contentBlockStop, messageStop, metadata.
 */
export function converseStreamFrames(chat: ChatRequest, reply: Reply, toolId: string): Buffer[] {
  const events: Array<[string, Record<string, unknown>]> = [['messageStart', { role: 'assistant' }]]
  const tool = chat.tool
  if (tool !== undefined) events.push(['contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: toolId, name: tool.name } } }])
  const deltas = tool === undefined
    ? splitForStream(reply.text).map((text) => ({ text }))
    : splitEvery(JSON.stringify(toolArguments(tool.schema)), 8).map((input) => ({ toolUse: { input } }))
  for (const delta of deltas) events.push(['contentBlockDelta', { contentBlockIndex: 0, delta }])
  events.push(['contentBlockStop', { contentBlockIndex: 0 }])
  events.push(['messageStop', { stopReason: stopReason(chat, reply) }])
  events.push(['metadata', { usage: usage(chat, reply), metrics: { latencyMs: 1 } }])
  return events.map(([type, payload], index) => eventFrame(type, { ...payload, p: PADDING.slice(0, 4 + (index * 7) % PADDING.length) }))
}
