import { forcedTool, type Answer, type ChatRequest } from '../dialects/dialect.ts'
import { promptCharacters, estimateTokens, splitEvery, splitForStream, toolArguments, type Reply } from '../reply/content.ts'

/** Azure adds content-filter annotations to OpenAI's bodies; everything else is the same. */
export type Flavor = 'openai' | 'azure'

const fingerprint = 'fp_simulator'

/** Azure's annotation for content that passed every filter. */
const filterPassed = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
}
const promptFilterResults = [{ prompt_index: 0, content_filter_results: filterPassed }]

/** Builds an OpenAI-style validation error; `fail` renders it in the dialect's envelope. */
export type Refuse = (message: string, param: string | null, code: string | null) => Answer

/** Validates a Chat Completions body the way OpenAI does (and Azure, which shares the format). */
export function parseChatBody(
  body: Record<string, unknown>, deployment: string | undefined, apiVersion: string | undefined, refuse: Refuse,
): ChatRequest | Answer {
  const model = deployment ?? body.model
  if (typeof model !== 'string' || model.length === 0) return refuse('you must provide a model parameter', null, null)
  const messages = body.messages
  if (!Array.isArray(messages)) return refuse("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter')
  if (messages.length === 0) return refuse("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array')
  const options = body.stream_options as { include_usage?: unknown } | null | undefined
  const limit = body.max_completion_tokens ?? body.max_tokens
  return {
    model,
    stream: body.stream === true,
    includeUsage: options?.include_usage === true,
    promptTokens: estimateTokens(promptCharacters(messages)),
    maxTokens: typeof limit === 'number' ? limit : undefined,
    tool: toolChoice(body.tools, body.tool_choice),
    apiVersion,
  }
}

/** The function a request forces with `tool_choice: "required"` or `{type: "function", function: {name}}`. */
function toolChoice(tools: unknown, choice: unknown): ChatRequest['tool'] {
  if (!Array.isArray(tools) || tools.length === 0) return undefined
  const functions = tools
    .map((tool) => (tool as { function?: { name?: unknown; parameters?: unknown } } | null)?.function)
    .flatMap((fn) => (typeof fn?.name === 'string' ? [{ name: fn.name, schema: fn.parameters }] : []))
  if (choice === 'required') return forcedTool(functions, undefined)
  const named = (choice as { function?: { name?: unknown } } | null)?.function?.name
  return typeof named === 'string' ? forcedTool(functions, named) : undefined
}

function usage(chat: ChatRequest, reply: Reply) {
  return {
    prompt_tokens: chat.promptTokens,
    completion_tokens: reply.completionTokens,
    total_tokens: chat.promptTokens + reply.completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  }
}

function finishReason(chat: ChatRequest, reply: Reply): string {
  if (chat.tool !== undefined) return 'tool_calls'
  return reply.truncated ? 'length' : 'stop'
}

/** A `chat.completion` object. */
export function completionBody(chat: ChatRequest, reply: Reply, id: string, callId: string, created: number, flavor: Flavor): string {
  const message = chat.tool === undefined
    ? { role: 'assistant', content: reply.text, refusal: null, annotations: [] }
    : {
        role: 'assistant', content: null, refusal: null, annotations: [],
        tool_calls: [{ id: callId, type: 'function', function: { name: chat.tool.name, arguments: JSON.stringify(toolArguments(chat.tool.schema)) } }],
      }
  const choice: Record<string, unknown> = { index: 0, message, logprobs: null, finish_reason: finishReason(chat, reply) }
  const body: Record<string, unknown> = {
    id, object: 'chat.completion', created, model: chat.model, choices: [choice], usage: usage(chat, reply),
  }
  if (flavor === 'azure') {
    choice.content_filter_results = filterPassed
    body.prompt_filter_results = promptFilterResults
  } else {
    body.service_tier = 'default'
  }
  body.system_fingerprint = fingerprint
  return JSON.stringify(body)
}

/** The `data:` events of a streamed completion, ending with `[DONE]`. */
export function streamEvents(chat: ChatRequest, reply: Reply, id: string, callId: string, created: number, flavor: Flavor): string[] {
  const withUsage = chat.includeUsage
  const chunk = (choices: unknown[], extra?: Record<string, unknown>): string => {
    const body: Record<string, unknown> = { id, object: 'chat.completion.chunk', created, model: chat.model, system_fingerprint: fingerprint, choices }
    if (flavor === 'openai') body.service_tier = 'default'
    if (withUsage) body.usage = null
    if (extra !== undefined) Object.assign(body, extra)
    return `data: ${JSON.stringify(body)}\n\n`
  }
  const delta = (value: Record<string, unknown>, finish: string | null): Record<string, unknown> => {
    const choice: Record<string, unknown> = { index: 0, delta: value, logprobs: null, finish_reason: finish }
    if (flavor === 'azure') choice.content_filter_results = finish === null && 'content' in value && value.content !== '' ? filterPassed : {}
    return choice
  }
  // Azure opens with the prompt's filter results and no choices.
  const events = flavor === 'azure' ? [`data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: promptFilterResults })}\n\n`] : []
  const tool = chat.tool
  const opening = tool === undefined
    ? { role: 'assistant', content: '', refusal: null }
    : { role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: tool.name, arguments: '' } }], refusal: null }
  const pieces = tool === undefined
    ? splitForStream(reply.text).map((content) => ({ content }))
    : splitEvery(JSON.stringify(toolArguments(tool.schema)), 8).map((piece) => ({ tool_calls: [{ index: 0, function: { arguments: piece } }] }))
  for (const value of [opening, ...pieces]) events.push(chunk([delta(value, null)]))
  events.push(chunk([delta({}, finishReason(chat, reply))]))
  if (withUsage) events.push(chunk([], { usage: usage(chat, reply) }))
  events.push('data: [DONE]\n\n')
  return events
}
