import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { FaultPreset, ProviderName } from '../index.ts'
import type { Reply } from '../reply/content.ts'
import type { IdMaker } from '../reply/format.ts'
import type { RateDecision, RateView } from '../rules/rate-window.ts'

/** A complete HTTP answer; headers as a flat `[name, value, ...]` list, the cheapest form for `writeHead`. */
export interface Answer {
  status: number
  headers: string[]
  body: string
}

/** A streamed answer: headers plus each event as it goes on the wire (SSE text, or binary event-stream frames), in order. */
export interface StreamAnswer {
  headers: string[]
  chunks: Array<string | Buffer>
}

/** The parts of a chat request the simulator acts on, the same for every dialect. */
export interface ChatRequest {
  /** The request's model, or the Azure deployment name. */
  model: string
  stream: boolean
  /** OpenAI `stream_options.include_usage`. */
  includeUsage?: boolean
  promptTokens: number
  maxTokens: number | undefined
  /** The tool the request forces, when `tools` plus a forcing `tool_choice` name one. */
  tool: { name: string; schema: unknown } | undefined
  /** Azure `api-version`. */
  apiVersion?: string
}

/** Faults that are answers; `timeout`, `reset`, `stream_cut` and `stream_error` are connection or stream behaviours instead. */
export type AnswerPreset = Exclude<FaultPreset, 'timeout' | 'reset' | 'stream_cut' | 'stream_error' | 'stream_stall' | 'stream_malformed' | 'stream_no_done'>

/** What a fault answer may mention. */
export interface FaultContext {
  model: string
  key: string
  apiVersion: string | undefined
  retryAfterS: number | undefined
  message: string | undefined
  requestId: string
}

/** Shared helpers a dialect draws on while answering one request. */
export interface AnswerContext {
  ids: IdMaker
  now: number
  requestId: string
  rate: RateView
}

/** One provider's wire format: how it authenticates, validates, answers and fails. */
export interface Dialect {
  readonly provider: ProviderName
  /** The API key the request carries, or undefined when it carries none. */
  readKey(headers: IncomingHttpHeaders): string | undefined
  missingKey(requestId: string): Answer
  /** A refusal of the request before its body is read as JSON (Anthropic's version header, Bedrock's SigV4 signature over method, path and body), if any. */
  authenticate?(request: IncomingMessage, body: string, requestId: string): Answer | undefined
  invalidJson(requestId: string): Answer
  /** Validates a parsed body; `model` is the Azure deployment when the path names one. */
  parse(body: Record<string, unknown>, deployment: string | undefined, apiVersion: string | undefined, requestId: string): ChatRequest | Answer
  complete(chat: ChatRequest, reply: Reply, context: AnswerContext): Answer
  stream(chat: ChatRequest, reply: Reply, context: AnswerContext): StreamAnswer
  /**
   * A stream that starts well and then carries the provider's in-band error (`stream_error`):
   * Bedrock's exception frame, Gemini's error object. A dialect without one answers `server_error`.
   */
  streamError?(chat: ChatRequest, reply: Reply, context: AnswerContext, message: string | undefined): StreamAnswer
  fault(preset: AnswerPreset, context: FaultContext): Answer
  /** The provider's 429 for a key over its scripted rpm/tpm. */
  rateLimited(decision: Extract<RateDecision, { allowed: false }>, context: FaultContext): Answer
}

/** Calls `use` with a request's whole body, as text. */
export function readBody(request: IncomingMessage, use: (text: string) => void): void {
  let body = ''
  request.setEncoding('utf8')
  request.on('data', (chunk: string) => { body += chunk })
  request.on('end', () => use(body))
}

/** A JSON text's value, or undefined when it is not valid JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Reads the API key a request sends in header `name`: undefined when absent or empty. */
export function headerKey(name: string): (headers: IncomingHttpHeaders) => string | undefined {
  return (headers) => {
    const key = headers[name]
    return typeof key === 'string' && key.length > 0 ? key : undefined
  }
}

/** JSON answer with the content headers every provider sends. */
export function jsonAnswer(status: number, headers: string[], body: string): Answer {
  headers.push('content-type', 'application/json', 'content-length', String(Buffer.byteLength(body)))
  return { status, headers, body }
}

/** An answer with no common headers yet (each dialect adds its own): an error before its envelope's headers. */
export function shape(status: number, body: string, headers: string[] = []): Answer {
  return { status, headers, body }
}

/** Headers without content-length (a body that ends early, or another body, must not promise the old length). */
export function withoutLength(headers: string[]): string[] {
  const kept: string[] = []
  for (let index = 0; index + 1 < headers.length; index += 2) {
    if (headers[index]!.toLowerCase() !== 'content-length') kept.push(headers[index]!, headers[index + 1]!)
  }
  return kept
}

/** An answer's status and headers with another JSON body. */
export function withBody(answer: Answer, body: string): Answer {
  return { status: answer.status, headers: [...withoutLength(answer.headers), 'content-length', String(Buffer.byteLength(body))], body }
}

/** The headers that open a server-sent event stream. */
export const sseHeaders: readonly string[] = ['content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache']

/** Why a body was refused, in the provider's words; the dialect puts it in its error envelope. */
export type Refusal = { refusal: string }

/** The tool a request forces from those it declares: the one named, or the first when no name is given. */
export function forcedTool(declared: Array<{ name: string; schema: unknown }>, name: string | undefined): ChatRequest['tool'] {
  if (name === undefined) return declared[0]
  return { name, schema: declared.find((tool) => tool.name === name)?.schema }
}

/** A parsed JSON object (not null, not an array): what a request body's fields are read from. */
export type Fields = Record<string, unknown>

/** Whether a parsed JSON value is an object with fields. */
export function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
