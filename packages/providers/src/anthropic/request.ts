import type { ChatRequestBody } from '../types.ts'
import { invalid, unsupported } from './errors.ts'
import { asRecord, toAnthropicConversation } from './messages.ts'

/** Anthropic requires `max_tokens`; this is sent when the caller set no limit. */
export const DEFAULT_MAX_TOKENS = 4096

/**
 * OpenAI chat.completions body -> Anthropic `/v1/messages` body for `model` (the upstream's name).
 * Fields Anthropic cannot honour throw a TranslationError rather than be dropped (the answer would
 * quietly differ); fields that only tune or annotate (`seed`, penalties, `logit_bias`, ...) are
 * ignored; `temperature` is clamped into Anthropic's 0..1.
 */
export function toAnthropicRequest (body: ChatRequestBody, model: string): Record<string, unknown> {
  rejectUnsupported(body)
  const { system, messages } = toAnthropicConversation(body.messages)
  const request: Record<string, unknown> = { model, max_tokens: maxTokens(body) }
  if (system !== undefined) request.system = system
  request.messages = messages

  const temperature = optionalNumber(body, 'temperature')
  if (temperature !== undefined) request.temperature = Math.min(Math.max(temperature, 0), 1)
  const topP = optionalNumber(body, 'top_p')
  if (topP !== undefined) request.top_p = topP
  const stopSequences = stopSequencesOf(body.stop)
  if (stopSequences.length > 0) request.stop_sequences = stopSequences
  if (body.stream === true) request.stream = true
  // `user` is deprecated by OpenAI in favour of `safety_identifier`; both mean the end user.
  const user = body.user ?? body.safety_identifier
  if (typeof user === 'string' && user !== '') request.metadata = { user_id: user }
  const tools = toolsOf(body.tools)
  if (tools.length > 0) {
    request.tools = tools
    const toolChoice = toolChoiceOf(body.tool_choice, body.parallel_tool_calls === false)
    if (toolChoice !== undefined) request.tool_choice = toolChoice
  }
  return request
}

function rejectUnsupported (body: ChatRequestBody): void {
  if (typeof body.n === 'number' && body.n > 1) throw unsupported('Anthropic returns one choice per request; send n=1 (or several requests).', 'n')
  if (body.logprobs === true) throw unsupported('Anthropic does not return log probabilities; remove `logprobs`.', 'logprobs')
  if (typeof body.top_logprobs === 'number' && body.top_logprobs > 0) throw unsupported('Anthropic does not return log probabilities; remove `top_logprobs`.', 'top_logprobs')
  if (asRecord(body.response_format)?.type === 'json_schema') {
    throw unsupported('Anthropic cannot enforce a response_format json_schema here; describe the JSON in the prompt or use a tool with that schema as input.', 'response_format')
  }
  const modalities = body.modalities
  if ((Array.isArray(modalities) && modalities.includes('audio')) || (body.audio !== undefined && body.audio !== null)) {
    throw unsupported('Anthropic models cannot answer with audio; ask for text only.', 'modalities')
  }
  if (body.functions !== undefined || body.function_call !== undefined) throw unsupported('`functions`/`function_call` are deprecated; send `tools` and `tool_choice` instead.', 'functions')
}

/** `max_completion_tokens` is OpenAI's current name; `max_tokens` is the older one still widely sent. */
function maxTokens (body: ChatRequestBody): number {
  const field = body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? 'max_completion_tokens' : 'max_tokens'
  const value = body[field]
  if (value === undefined || value === null) return DEFAULT_MAX_TOKENS
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw invalid(`\`${field}\` must be a positive integer.`, field)
  return value
}

/** A number field, undefined when absent or null (OpenAI treats null as "use the default"). */
function optionalNumber (body: ChatRequestBody, field: string): number | undefined {
  const value = body[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`\`${field}\` must be a number.`, field)
  return value
}

function stopSequencesOf (stop: unknown): string[] {
  if (stop === undefined || stop === null) return []
  if (typeof stop === 'string') return stop === '' ? [] : [stop]
  if (Array.isArray(stop) && stop.every((entry): entry is string => typeof entry === 'string')) return stop.filter((entry) => entry !== '')
  throw invalid('`stop` must be a string or an array of strings.', 'stop')
}

/** OpenAI function tools -> Anthropic custom tools. `strict` has no Anthropic counterpart here and is dropped. */
function toolsOf (tools: unknown): Array<Record<string, unknown>> {
  if (tools === undefined || tools === null) return []
  if (!Array.isArray(tools)) throw invalid('`tools` must be an array.', 'tools')
  return (tools as unknown[]).map((tool, position) => {
    const field = `tools[${position}]`
    const record = asRecord(tool)
    if (record?.type !== 'function') throw unsupported(`${field}: only tools of type "function" can be forwarded to Anthropic.`, `${field}.type`)
    const definition = asRecord(record.function)
    if (typeof definition?.name !== 'string' || definition.name === '') throw invalid(`${field}.function.name is required.`, `${field}.function.name`)
    const translated: Record<string, unknown> = { name: definition.name }
    if (typeof definition.description === 'string') translated.description = definition.description
    // OpenAI lets a function omit `parameters` (no arguments); Anthropic requires a schema.
    translated.input_schema = asRecord(definition.parameters) ?? { type: 'object', properties: {} }
    return translated
  })
}

/**
 * OpenAI `tool_choice` + `parallel_tool_calls` -> Anthropic `tool_choice` ("required" is "any"),
 * which holds the parallel switch: `parallel_tool_calls: false` alone is `{type: "auto", disable_parallel_tool_use: true}`.
 */
function toolChoiceOf (choice: unknown, singleToolCall: boolean): Record<string, unknown> | undefined {
  if (choice === 'none') return { type: 'none' }
  let translated: Record<string, unknown> | undefined
  if (choice === 'auto') translated = { type: 'auto' }
  else if (choice === 'required') translated = { type: 'any' }
  else if (choice !== undefined && choice !== null) {
    const record = asRecord(choice)
    const name = asRecord(record?.function)?.name
    if (record?.type !== 'function' || typeof name !== 'string') throw unsupported('`tool_choice` must be "auto", "none", "required" or {type: "function", function: {name}}.', 'tool_choice')
    translated = { type: 'tool', name }
  }
  if (!singleToolCall) return translated
  return { ...(translated ?? { type: 'auto' }), disable_parallel_tool_use: true }
}
