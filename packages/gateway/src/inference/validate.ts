/**
 * Checks a chat.completions body before any upstream sees it (issue 13): every field OpenAI
 * documents is type-checked, `param` naming the one to fix; unknown fields pass untouched.
 * Hand-written: it runs on every request. Optional fields may be null, except `stream`.
 */
import type { ChatRequestBody } from '@switchboard/providers'
import { GatewayError } from '../errors.ts'

/** A validated request: the upstream body (without gateway-only fields) and the gateway's own fields. */
export interface ValidatedChatRequest {
  body: ChatRequestBody
  model: string
  fallbacks: string[]
  stream: boolean
}

/** Most `fallbacks` one request may carry (each gets a full retry budget). */
export const MAX_FALLBACKS = 10

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function'])

const fail = (message: string, param: string): never => {
  throw new GatewayError('invalid_request', message, { param })
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value)

type Check = (value: unknown, param: string) => void

/** A number in [min, max]; `integer` for counts. */
const number =
  (min: number, max: number, integer = false): Check =>
  (value, param) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) return fail(`"${param}" must be a number.`, param)
    if (integer && !Number.isInteger(value)) fail(`"${param}" must be a whole number.`, param)
    if (value < min || value > max) fail(`"${param}" must be between ${min} and ${max} (got ${value}).`, param)
  }

/** A check that `value` is `what` (the message says so). */
const shaped =
  (ok: (value: unknown) => boolean, what: string): Check =>
  (value, param) => {
    if (!ok(value)) fail(`"${param}" must be ${what}.`, param)
  }

const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every((entry) => typeof entry === 'string')
const boolean = shaped((value) => typeof value === 'boolean', 'true or false')
const string = shaped((value) => typeof value === 'string', 'a string')
const object = shaped(isObject, 'an object')
const stop = shaped((value) => typeof value === 'string' || (isStrings(value) && value.length <= 4), 'a string or an array of up to 4 strings')
const stringArray = shaped(isStrings, 'an array of strings')
const choice = shaped((value) => typeof value === 'string' || isObject(value), 'a string ("none", "auto", "required") or an object naming a function')
const responseFormat = shaped((value) => isObject(value) && typeof value.type === 'string', 'an object with a "type" such as "text", "json_object" or "json_schema"')

const logitBias: Check = (value, param) => {
  if (!isObject(value)) return fail(`"${param}" must be an object of token id to a number from -100 to 100.`, param)
  for (const [token, bias] of Object.entries(value)) {
    if (typeof bias !== 'number' || !Number.isFinite(bias) || bias < -100 || bias > 100) fail(`"${param}.${token}" must be a number from -100 to 100.`, `${param}.${token}`)
  }
}

const tools: Check = (value, param) => {
  if (!Array.isArray(value)) return fail(`"${param}" must be an array of {"type": "function", "function": {"name", ...}} objects.`, param)
  value.forEach((tool, index) => {
    const at = `${param}[${index}]`
    if (!isObject(tool)) return fail(`${at} must be an object such as {"type": "function", "function": {"name": "..."}}.`, at)
    if (typeof tool.type !== 'string') fail(`${at}.type must be a string such as "function".`, `${at}.type`)
    if (tool.type === 'function') {
      const fn = tool.function
      if (!isObject(fn)) return fail(`${at}.function must be an object with "name".`, `${at}.function`)
      if (typeof fn.name !== 'string' || fn.name === '') fail(`${at}.function.name must be a non-empty string.`, `${at}.function.name`)
      if (fn.description !== undefined && fn.description !== null && typeof fn.description !== 'string') fail(`${at}.function.description must be a string.`, `${at}.function.description`)
      if (fn.parameters !== undefined && fn.parameters !== null && !isObject(fn.parameters)) fail(`${at}.function.parameters must be a JSON Schema object.`, `${at}.function.parameters`)
    }
  })
}

const functions: Check = (value, param) => {
  if (!Array.isArray(value)) return fail(`"${param}" must be an array of {"name", ...} objects.`, param)
  value.forEach((fn, index) => {
    if (!isObject(fn) || typeof fn.name !== 'string' || fn.name === '') fail(`${param}[${index}] must be an object with a non-empty "name".`, `${param}[${index}]`)
  })
}

/** Every optional field OpenAI documents, with its check (a Map: a body's `__proto__` or `constructor` is just a field). */
const FIELDS = new Map<string, Check>(Object.entries({
  temperature: number(0, 2),
  top_p: number(0, 1),
  n: number(1, 128, true),
  max_tokens: number(1, Number.MAX_SAFE_INTEGER, true),
  max_completion_tokens: number(1, Number.MAX_SAFE_INTEGER, true),
  presence_penalty: number(-2, 2),
  frequency_penalty: number(-2, 2),
  seed: number(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
  top_logprobs: number(0, 20, true),
  logprobs: boolean,
  parallel_tool_calls: boolean,
  store: boolean,
  stop,
  user: string,
  service_tier: string,
  reasoning_effort: string,
  logit_bias: logitBias,
  metadata: object,
  stream_options: object,
  prediction: object,
  audio: object,
  web_search_options: object,
  modalities: stringArray,
  tools,
  tool_choice: choice,
  functions,
  function_call: choice,
  response_format: responseFormat,
} satisfies Record<string, Check>))

/** A message's content: a string, or an array of parts each with a string `type`; null only where it may be. */
function checkContent(content: unknown, param: string, nullable: boolean): void {
  if (typeof content === 'string') return
  if (content === null || content === undefined) {
    if (!nullable) fail(`${param} is required: a string, or an array of content parts.`, param)
    return
  }
  if (!Array.isArray(content)) return fail(`${param} must be a string or an array of content parts (got ${typeof content}).`, param)
  content.forEach((part, index) => {
    if (!isObject(part) || typeof part.type !== 'string') fail(`${param}[${index}] must be an object with a "type" such as "text" or "image_url".`, `${param}[${index}]`)
    else if (part.type === 'text' && typeof part.text !== 'string') fail(`${param}[${index}].text must be a string.`, `${param}[${index}].text`)
  })
}

function checkMessage(message: unknown, index: number): void {
  const at = `messages[${index}]`
  if (!isObject(message)) return fail(`${at} must be an object with "role" and "content".`, at)
  const role = message.role
  if (typeof role !== 'string' || !ROLES.has(role)) return fail(`${at}.role must be one of "system", "developer", "user", "assistant" or "tool".`, `${at}.role`)
  // An assistant turn that calls tools may have no content.
  checkContent(message.content, `${at}.content`, role === 'assistant')
  if (message.name !== undefined && message.name !== null && typeof message.name !== 'string') fail(`${at}.name must be a string.`, `${at}.name`)
  if (role === 'tool' && typeof message.tool_call_id !== 'string') fail(`${at}.tool_call_id must be a string: the id of the tool call this answers.`, `${at}.tool_call_id`)
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) return fail(`${at}.tool_calls must be an array.`, `${at}.tool_calls`)
    message.tool_calls.forEach((call, callIndex) => {
      if (!isObject(call) || typeof call.id !== 'string' || !isObject(call.function) || typeof call.function.name !== 'string') {
        fail(`${at}.tool_calls[${callIndex}] must be {"id", "type": "function", "function": {"name", "arguments"}}.`, `${at}.tool_calls[${callIndex}]`)
      }
    })
  }
}

/** Validates a parsed JSON body; throws GatewayError('invalid_request') naming the field. */
export function validateChatRequest(json: unknown): ValidatedChatRequest {
  if (!isObject(json)) return fail('The request body must be a JSON object with "model" and "messages".', '')
  const input = json
  const model = readModel(input, 'openai', 'gpt-4o-mini')
  const messages = input.messages
  if (!Array.isArray(messages) || messages.length === 0) {
    return fail(messages === undefined ? '"messages" is required: an array of {role, content} objects.' : '"messages" must be a non-empty array of {role, content} objects.', 'messages')
  }
  for (let index = 0; index < messages.length; index++) checkMessage(messages[index], index)
  const stream = input.stream
  if (stream !== undefined && typeof stream !== 'boolean') fail('"stream" must be true or false.', 'stream')
  const fallbacks = readFallbacks(input)
  for (const field in input) {
    const check = FIELDS.get(field)
    const value = input[field]
    if (check !== undefined && value !== null && value !== undefined) check(value, field)
  }
  return { body: upstreamFields(input) as unknown as ChatRequestBody, model, fallbacks, stream: stream === true }
}

/** `model` as a non-empty string, or a 400 naming it; the message's example is `provider/example` or `example`. */
export function readModel(input: Record<string, unknown>, provider: string, example: string): string {
  const model = input.model
  if (typeof model === 'string' && model.trim() !== '') return model
  return fail(model === undefined ? `"model" is required: name a model, e.g. "${provider}/${example}" or "${example}".` : '"model" must be a non-empty string.', 'model')
}

/** `fallbacks` (a Switchboard field) checked: every surface reads it the same way. */
export function readFallbacks(input: Record<string, unknown>): string[] {
  const fallbacks = input.fallbacks
  if (fallbacks === undefined || fallbacks === null) return []
  if (!Array.isArray(fallbacks)) return fail('"fallbacks" must be an array of "provider/model" strings.', 'fallbacks')
  if (fallbacks.length > MAX_FALLBACKS) fail(`"fallbacks" may list at most ${MAX_FALLBACKS} entries (got ${fallbacks.length}).`, 'fallbacks')
  fallbacks.forEach((fallback: unknown, index) => {
    if (typeof fallback !== 'string' || !/^[^/\s]+\/\S+$/.test(fallback)) {
      fail(`fallbacks[${index}] must be a "provider/model" string, e.g. "anthropic/claude-3-5-haiku-latest".`, `fallbacks[${index}]`)
    }
  })
  return fallbacks as string[]
}

/** The caller's body without the gateway's own fields, for the upstream. */
export function upstreamFields(input: Record<string, unknown>): Record<string, unknown> {
  if (!('fallbacks' in input)) return input
  const { fallbacks: _omitted, ...rest } = input
  return rest
}
