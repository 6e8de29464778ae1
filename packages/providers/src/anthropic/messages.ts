import { invalid, unsupported } from './errors.ts'

/** One Anthropic content block (`text`, `image`, `tool_use`, `tool_result`, ...). */
export interface AnthropicBlock {
  type: string
  [field: string]: unknown
}

/** One Anthropic message; a lone text block is sent as a plain string, as Anthropic's own examples do. */
export interface AnthropicMessage {
  role: 'user' | 'assistant'
  content: string | AnthropicBlock[]
}

/** An OpenAI `messages` array split the way Anthropic wants it. */
export interface AnthropicConversation {
  /** Undefined when there were no system/developer messages. */
  system: string | AnthropicBlock[] | undefined
  messages: AnthropicMessage[]
}

type Turn = Pick<AnthropicMessage, 'role'> & { blocks: AnthropicBlock[] }

/**
 * OpenAI chat messages -> Anthropic's top-level `system` (system and developer messages hoisted,
 * in order) plus strictly alternating turns: `tool` messages are `tool_result` blocks of a user
 * turn, same-role turns merge (parallel tool results arrive together), empty ones are dropped.
 */
export function toAnthropicConversation (messages: unknown): AnthropicConversation {
  if (!Array.isArray(messages)) throw invalid('`messages` must be an array of chat messages.', 'messages')
  const system: AnthropicBlock[] = []
  const turns: Turn[] = []
  messages.forEach((entry: unknown, position: number) => {
    const field = `messages[${position}]`
    const message = asRecord(entry)
    if (message === undefined) throw invalid(`${field} must be an object.`, field)
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(message.content, `${field}.content`))
        return
      case 'user':
        appendTurn(turns, 'user', userBlocks(message.content, `${field}.content`))
        return
      case 'assistant':
        appendTurn(turns, 'assistant', assistantBlocks(message, field))
        return
      case 'tool':
        appendTurn(turns, 'user', [toolResultBlock(message, field)])
        return
      case 'function':
        throw unsupported(`${field}: the deprecated \`function\` role cannot be sent to Anthropic; use \`tool\` messages with a tool_call_id.`, `${field}.role`)
      default:
        throw invalid(`${field}.role must be one of system, developer, user, assistant, tool.`, `${field}.role`)
    }
  })
  return {
    system: system.length === 0 ? undefined : collapse(system),
    messages: turns.map((turn) => ({ role: turn.role, content: collapse(turn.blocks) })),
  }
}

function appendTurn (turns: Turn[], role: Turn['role'], blocks: AnthropicBlock[]): void {
  if (blocks.length === 0) return
  const last = turns.at(-1)
  if (last?.role === role) last.blocks.push(...blocks)
  else turns.push({ role, blocks })
}

/** A system prompt's or message's content as blocks (a plain string is one text block), for formats that map Anthropic's blocks onto their own. */
export function blocksOf (content: string | AnthropicBlock[]): AnthropicBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content
}

/** A single text block reads best, and matches what callers of Anthropic send, as a plain string. */
function collapse (blocks: AnthropicBlock[]): string | AnthropicBlock[] {
  const only = blocks.length === 1 ? blocks[0] : undefined
  return only?.type === 'text' && typeof only.text === 'string' ? only.text : blocks
}

/** Content that may only hold text: a string or an array of `{type:"text"}` parts (and, an assistant's, `refusal` parts). */
function textBlocks (content: unknown, field: string, refusals = false): AnthropicBlock[] {
  if (content === undefined || content === null) return []
  if (typeof content === 'string') return textBlock(content)
  if (!Array.isArray(content)) throw invalid(`${field} must be a string or an array of text parts.`, field)
  return content.flatMap((part: unknown, position) => {
    const record = asRecord(part)
    // A refusal the model gave earlier is still something it said.
    const text = record?.type === 'text' ? record.text : refusals && record?.type === 'refusal' ? record.refusal : undefined
    if (typeof text !== 'string') throw invalid(`${field}[${position}] must be a ${refusals ? 'text or refusal' : 'text'} part.`, `${field}[${position}]`)
    return textBlock(text)
  })
}

/** Anthropic rejects empty text blocks, so empty strings simply vanish. */
function textBlock (text: string): AnthropicBlock[] {
  return text === '' ? [] : [{ type: 'text', text }]
}

function userBlocks (content: unknown, field: string): AnthropicBlock[] {
  if (!Array.isArray(content)) return textBlocks(content, field)
  return content.flatMap((part: unknown, position) => userPart(part, `${field}[${position}]`))
}

function userPart (part: unknown, field: string): AnthropicBlock[] {
  const record = asRecord(part)
  switch (record?.type) {
    case 'text':
      if (typeof record.text !== 'string') break
      return textBlock(record.text)
    case 'image_url':
      return [imageBlock(record.image_url, field)]
    case 'file':
      return [documentBlock(record.file, field)]
    case 'input_audio':
      throw unsupported(`${field}: Anthropic models do not accept audio input.`, field)
  }
  throw invalid(`${field} must be a text, image_url or file content part.`, field)
}

/** OpenAI's `image_url` is `{url, detail}` (some clients send the bare URL string); `detail` has no Anthropic equivalent. */
function imageBlock (imageUrl: unknown, field: string): AnthropicBlock {
  const url = typeof imageUrl === 'string' ? imageUrl : asRecord(imageUrl)?.url
  if (typeof url !== 'string' || url === '') throw invalid(`${field}.image_url.url must be a URL or a data: URL.`, `${field}.image_url.url`)
  if (url.startsWith('data:')) {
    const { mediaType, data } = parseDataUrl(url, `${field}.image_url.url`)
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data } }
  }
  return { type: 'image', source: { type: 'url', url } }
}

/** Only inline PDFs translate: an OpenAI `file_id` names a file stored at OpenAI, which Anthropic cannot read. */
function documentBlock (file: unknown, field: string): AnthropicBlock {
  const fileData = asRecord(file)?.file_data
  if (typeof fileData !== 'string') throw unsupported(`${field}: only files sent inline as file.file_data (a base64 data: URL) can be forwarded to Anthropic.`, `${field}.file`)
  const { mediaType, data } = parseDataUrl(fileData, `${field}.file.file_data`)
  if (mediaType !== 'application/pdf') throw unsupported(`${field}: Anthropic accepts PDF documents only, not ${mediaType}.`, `${field}.file.file_data`)
  return { type: 'document', source: { type: 'base64', media_type: mediaType, data } }
}

/** Splits `data:<media type>[;params];base64,<data>`; Anthropic only takes base64 payloads. */
function parseDataUrl (url: string, field: string): { mediaType: string, data: string } {
  const comma = url.indexOf(',')
  const parameters = comma === -1 ? [] : url.slice('data:'.length, comma).split(';')
  const mediaType = parameters[0]
  if (mediaType === undefined || mediaType === '' || !parameters.includes('base64')) throw invalid(`${field} must be a base64 data URL such as data:image/png;base64,....`, field)
  return { mediaType, data: url.slice(comma + 1) }
}

function assistantBlocks (message: Record<string, unknown>, field: string): AnthropicBlock[] {
  if (message.function_call !== undefined && message.function_call !== null) throw unsupported(`${field}.function_call is the deprecated form; send tool_calls instead.`, `${field}.function_call`)
  const blocks = textBlocks(message.content, `${field}.content`, true)
  if (blocks.length === 0 && typeof message.refusal === 'string') blocks.push(...textBlock(message.refusal))
  const toolCalls: unknown = message.tool_calls ?? []
  if (!Array.isArray(toolCalls)) throw invalid(`${field}.tool_calls must be an array.`, `${field}.tool_calls`)
  toolCalls.forEach((call: unknown, position) => blocks.push(toolUseBlock(call, `${field}.tool_calls[${position}]`)))
  return blocks
}

function toolUseBlock (call: unknown, field: string): AnthropicBlock {
  const record = asRecord(call)
  const callFunction = asRecord(record?.function)
  if (record?.type !== 'function' || typeof record.id !== 'string' || typeof callFunction?.name !== 'string') throw invalid(`${field} must be {id, type: "function", function: {name, arguments}}.`, field)
  return { type: 'tool_use', id: record.id, name: callFunction.name, input: parseArguments(callFunction.arguments) }
}

/**
 * A call's arguments as the JSON object Anthropic's `input` must be: arguments the model cut off
 * or mangled in an earlier turn are `{}`, keeping a history OpenAI itself would accept valid.
 */
export function parseArguments (text: unknown): Record<string, unknown> {
  return (typeof text === 'string' ? parseObject(text) : asRecord(text)) ?? {}
}

function toolResultBlock (message: Record<string, unknown>, field: string): AnthropicBlock {
  if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '') throw invalid(`${field}.tool_call_id is required on tool messages.`, `${field}.tool_call_id`)
  const content = textBlocks(message.content, `${field}.content`)
  const block: AnthropicBlock = { type: 'tool_result', tool_use_id: message.tool_call_id }
  // Anthropic allows a tool_result without content but not with an empty text block.
  if (content.length > 0) block.content = collapse(content)
  return block
}

/** The value as a plain JSON object, or undefined for anything else (arrays included). */
export function asRecord (value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
}

/** The JSON object `text` holds, or undefined when it is not JSON or holds anything else. */
export function parseObject (text: string): Record<string, unknown> | undefined {
  try {
    return asRecord(JSON.parse(text))
  } catch {
    return undefined
  }
}
