/** Small HTTP helpers the simulator's own tests share; not part of the public API. */
import type { ProviderName, Simulator } from '../src/index.ts'

/** One parsed server-sent event. */
export interface SseEvent {
  event: string | undefined
  data: string
}

/**
 * A parsed wire body. `any` on purpose: tests check its shape with run-time
 * assertions, so a static type would only restate them.
 */
export type WireBody = any

/** A response read to the end. */
export interface CallReply {
  status: number
  headers: Headers
  text: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: WireBody
}

/** Request options: the provider picks path and auth header. */
export interface CallOptions {
  key?: string | null
  model?: string
  body?: Record<string, unknown>
  /** Extra or replacing headers. */
  headers?: Record<string, string>
  rawBody?: string
  apiVersion?: string | null
  signal?: AbortSignal
}

/** Where each provider's chat endpoint lives and how it authenticates. */
export function endpoint(provider: ProviderName, model: string, apiVersion: string | null = '2024-10-21'): string {
  if (provider === 'openai') return '/v1/chat/completions'
  if (provider === 'anthropic') return '/v1/messages'
  const query = apiVersion === null ? '' : `?api-version=${apiVersion}`
  return `/openai/deployments/${encodeURIComponent(model)}/chat/completions${query}`
}

/** Sends a minimal valid chat request for the provider, with overrides. */
export async function call(simulator: Simulator, provider: ProviderName, options: CallOptions = {}): Promise<CallReply> {
  const response = await send(simulator, provider, options)
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, json: parseJson(text) }
}

/** Like {@link call} but returns the response unread, for streaming and abort tests. */
export function send(simulator: Simulator, provider: ProviderName, options: CallOptions = {}): Promise<Response> {
  const model = options.model ?? (provider === 'anthropic' ? 'claude-sonnet-4-5' : 'gpt-4o')
  const key = options.key === undefined ? 'sk-test-key-1234' : options.key
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key !== null) {
    if (provider === 'openai') headers.authorization = `Bearer ${key}`
    if (provider === 'azure') headers['api-key'] = key
    if (provider === 'anthropic') headers['x-api-key'] = key
  }
  if (provider === 'anthropic') headers['anthropic-version'] = '2023-06-01'
  Object.assign(headers, options.headers)
  const body: Record<string, unknown> = { messages: [{ role: 'user', content: 'Hello there, simulator.' }] }
  if (provider !== 'azure') body.model = model
  if (provider === 'anthropic') body.max_tokens = 1024
  Object.assign(body, options.body)
  return fetch(simulator.url + endpoint(provider, model, options.apiVersion), {
    method: 'POST', headers, body: options.rawBody ?? JSON.stringify(body), signal: options.signal,
  })
}

function parseJson(text: string): WireBody {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Splits an SSE body into events. */
export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = []
  for (const block of text.split('\n\n')) {
    if (block.trim() === '') continue
    let event: string | undefined
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    events.push({ event, data: data.join('\n') })
  }
  return events
}

/** Calls the control API and parses the JSON answer. */
export async function control(simulator: Simulator, method: string, path: string, body?: unknown): Promise<{ status: number; json: WireBody }> {
  const response = await fetch(simulator.url + path, {
    method, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: response.status, json: parseJson(await response.text()) }
}

/** Polls until `check` passes; for state that settles after a socket closes. */
export async function eventually<T>(read: () => T | Promise<T>, check: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read()
    if (check(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
