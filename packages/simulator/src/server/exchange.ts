import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FaultPreset, FaultSpec, SimulatorRule } from '../index.ts'
import { isFields, parseJson, readBody, withoutLength, type Answer, type AnswerContext, type ChatRequest, type Dialect, type FaultContext, type StreamAnswer } from '../dialects/dialect.ts'
import { buildReply, type Reply } from '../reply/content.ts'
import { afterContent, eventKind, malformed, type StreamScript } from '../stream/script.ts'
import { defaultRequestsLimit, defaultTokensLimit, type RateView } from '../rules/rate-window.ts'
import { sampleLatency } from '../rules/random.ts'
import { keySuffix } from './records.ts'
import { anthropicErrorBody } from '../anthropic/errors.ts'
import type { SimulatorState } from './state.ts'

/** Headers-only view used when no rule limits the key: a fresh, generous window. */
const unlimitedView: RateView = {
  requestsLimit: defaultRequestsLimit, requestsRemaining: defaultRequestsLimit - 1, requestsResetMs: 6,
  tokensLimit: defaultTokensLimit, tokensRemaining: defaultTokensLimit, tokensResetMs: 0,
}

const ignore = (): void => {}

/** Stream pieces as one write: SSE text joined, binary frames concatenated. */
function joined(chunks: Array<string | Buffer>): string | Buffer {
  if (chunks.length === 0 || typeof chunks[0] === 'string') return chunks.join('')
  return Buffer.concat(chunks as Buffer[])
}

/** Writes a whole answer. */
export function send(response: ServerResponse, answer: Answer): void {
  response.writeHead(answer.status, answer.headers)
  response.end(answer.body)
}

/** `{[name]: value}` when a header was sent once, else nothing: a record's optional fields. */
function header<Name extends string>(name: Name, value: string | string[] | undefined): { [field in Name]?: string } {
  return typeof value === 'string' ? { [name]: value } as { [field in Name]: string } : {}
}

/**
 * One provider request from arrival to record: read, validate, apply the rules, wait, answer (or
 * misbehave), note how it ended. Its timers go when the connection closes: a client that gives up costs nothing more.
 */
export class Exchange {
  private key = ''
  private model = ''
  private stream = false
  private fault: string | undefined
  private timer: NodeJS.Timeout | undefined
  private destroyedOnPurpose = false
  private readonly requestId: string
  /** The assistant's text the conversation ends with, when the request asks for a continuation. */
  private prefill: string | undefined

  constructor(
    private readonly state: SimulatorState,
    private readonly dialect: Dialect,
    private readonly request: IncomingMessage,
    private readonly response: ServerResponse,
    /** The API path asked, without the query. */
    private readonly path: string,
    private readonly deployment?: string,
    private readonly apiVersion?: string,
  ) {
    this.requestId = state.ids.next('req_')
    state.log.started()
    request.on('error', ignore)
    response.on('error', ignore)
    response.once('close', () => this.finish())
    readBody(request, (body) => this.handle(body))
  }

  private handle(text: string): void {
    const dialect = this.dialect
    this.model = this.deployment ?? ''
    const key = dialect.readKey(this.request.headers)
    if (key === undefined) return this.send(dialect.missingKey(this.requestId))
    this.key = key
    const refusal = dialect.authenticate?.(this.request, text, this.requestId)
    if (refusal !== undefined) return this.send(refusal)
    const body = parseJson(text)
    if (!isFields(body)) return this.send(dialect.invalidJson(this.requestId))
    this.prefill = prefillOf(body)
    const chat = dialect.parse(body, this.deployment, this.apiVersion, this.requestId)
    if ('status' in chat) return this.send(chat)
    this.model = chat.model
    this.stream = chat.stream
    const rule = this.state.rules.resolve(dialect.provider, key, chat.model)
    if (rule === undefined) return this.succeed(chat, undefined, unlimitedView)
    this.scripted(chat, rule)
  }

  /** Applies a merged rule: fault, rate limit, error rate, latency, then the answer. */
  private scripted(chat: ChatRequest, rule: SimulatorRule): void {
    const state = this.state
    let fault = rule.fault
    if (fault === undefined && rule.error_rate !== undefined && state.random() < rule.error_rate) {
      fault = rule.error ?? 'server_error'
    }
    // What to do once the latency has passed, when it is not the answer itself.
    let act: (() => void) | undefined
    let rate = unlimitedView
    const betaRefused = betaRefusal(rule, this.request.headers['anthropic-beta'], this.requestId)
    if (betaRefused !== undefined) {
      this.fault = 'refuses_betas'
      act = this.sending(betaRefused)
    } else if (rule.rejects_prefill === true && this.prefill !== undefined) {
      this.fault = 'rejects_prefill'
      act = this.sending(this.dialect.fault('bad_request', this.faultContext(chat, { message: PREFILL_REFUSED })))
    } else if (fault !== undefined) {
      act = this.faultAction(chat, rule, fault)
    } else if (rule.rpm !== undefined || rule.tpm !== undefined) {
      const tokens = chat.promptTokens + (rule.completion_tokens ?? 0)
      const decision = state.windows.check(`${this.dialect.provider}\u0000${this.key}`, Date.now(), tokens, rule.rpm, rule.tpm)
      if (decision.allowed) {
        rate = decision.view
      } else {
        this.fault = 'rate_limit'
        act = this.sending(this.dialect.rateLimited(decision, this.faultContext(chat, undefined)))
      }
    }
    const latency = rule.latency_ms === undefined ? 0 : sampleLatency(rule.latency_ms, state.random)
    this.after(latency, act ?? (() => this.succeed(chat, rule, rate)))
  }

  private faultAction(chat: ChatRequest, rule: SimulatorRule, fault: FaultSpec): () => void {
    if (typeof fault === 'object' && 'status' in fault) {
      this.fault = 'raw'
      const body = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body)
      const headers = Object.entries(fault.headers ?? {}).flat()
      if (!headers.some((name, index) => index % 2 === 0 && name.toLowerCase() === 'content-type')) headers.push('content-type', 'application/json')
      return this.sending({ status: fault.status, headers, body })
    }
    const preset: FaultPreset = typeof fault === 'string' ? fault : fault.preset
    const options = typeof fault === 'string' ? undefined : fault
    this.fault = preset
    switch (preset) {
      case 'timeout': return () => this.hold(options?.after_ms)
      case 'reset': return () => this.destroy()
      case 'stream_cut':
      case 'stream_stall':
      case 'stream_malformed':
      case 'stream_no_done': {
        const reply = this.replyFor(chat, rule)
        const context = this.answerContext(unlimitedView)
        if (!chat.stream) {
          if (preset === 'stream_stall') return () => this.hold(options?.after_ms)
          // A malformed or unfinished body: half of it, on a connection that closes cleanly.
          const whole = this.dialect.complete(chat, reply, context)
          return () => this.cut(whole, preset !== 'stream_cut')
        }
        const answer = this.dialect.stream(chat, reply, context)
        const chunks = answer.chunks
        const content = chunks.filter((chunk) => eventKind(chunk) === 'content').length
        const count = options?.after_chunks ?? (preset === 'stream_no_done' ? content : Math.floor(content / 2))
        // Without after_chunks, a cut keeps its old shape: half the events, whatever they are.
        const sent = preset === 'stream_cut' && options?.after_chunks === undefined ? Math.max(1, Math.floor(chunks.length / 2)) : afterContent(chunks, count)
        if (preset === 'stream_malformed') {
          if (sent < chunks.length) chunks[sent] = malformed(chunks[sent]!)
          return () => this.writeStream(answer, rule)
        }
        const ending = preset === 'stream_cut' ? 'destroy' : preset === 'stream_stall' ? 'hold' : 'end'
        return () => this.writeStream(answer, rule, { sent, ending, holdMs: options?.after_ms })
      }
      case 'stream_error': {
        // The in-band error only exists in a stream; a plain request (or a dialect without one) gets the 500.
        if (!chat.stream || this.dialect.streamError === undefined) return this.sending(this.dialect.fault('server_error', this.faultContext(chat, options)))
        const answer = this.dialect.streamError(chat, this.replyFor(chat, rule), this.answerContext(unlimitedView), options?.message)
        return () => this.writeStream(answer, rule)
      }
      default: return this.sending(this.dialect.fault(preset, this.faultContext(chat, options)))
    }
  }

  private faultContext(chat: ChatRequest, options: { retry_after_s?: number; message?: string } | undefined): FaultContext {
    return {
      model: chat.model, key: this.key, apiVersion: chat.apiVersion,
      retryAfterS: options?.retry_after_s, message: options?.message, requestId: this.requestId,
    }
  }

  /** The reply to a request; a continuation (the conversation ends with the assistant's text) gets the rest of it. */
  private replyFor(chat: ChatRequest, rule: SimulatorRule | undefined): Reply {
    const reply = buildReply(this.dialect.provider, chat.model, rule?.completion_tokens, chat.maxTokens)
    const prefill = this.prefill?.trimEnd()
    if (prefill === undefined || prefill === '' || !reply.text.startsWith(prefill)) return reply
    return { ...reply, text: reply.text.slice(prefill.length) }
  }

  private answerContext(rate: RateView): AnswerContext {
    return { ids: this.state.ids, now: Date.now(), requestId: this.requestId, rate }
  }

  private succeed(chat: ChatRequest, rule: SimulatorRule | undefined, rate: RateView): void {
    const reply = this.replyFor(chat, rule)
    const context = this.answerContext(rate)
    if (chat.stream) return this.writeStream(this.dialect.stream(chat, reply, context), rule)
    // A plain request has no first token of its own: the delay is more latency before the answer.
    this.after(rule?.first_token_delay_ms ?? 0, () => this.send(this.dialect.complete(chat, reply, context)))
  }

  /** Half an answer, on a connection that closes cleanly (`clean`: the headers must not promise its length) or breaks. */
  private cut(answer: Answer, clean: boolean): void {
    const half = answer.body.slice(0, Math.floor(answer.body.length / 2))
    this.response.writeHead(answer.status, clean ? withoutLength(answer.headers) : answer.headers)
    if (clean) this.response.end(half)
    else this.response.write(half, () => this.destroy())
  }

  /** Writes a stream as its script says, `rule`'s delays before its events: back to back where nothing delays them, then its ending. */
  private writeStream(answer: StreamAnswer, rule: SimulatorRule | undefined, script: StreamScript = { sent: answer.chunks.length, ending: 'end', holdMs: undefined }): void {
    const response = this.response
    const { chunks } = answer
    const { sent } = script
    const chunkDelayMs = rule?.chunk_delay_ms ?? 0
    const firstContentDelayMs = rule?.first_token_delay_ms ?? 0
    response.writeHead(200, answer.headers)
    const firstContent = firstContentDelayMs > 0 ? chunks.findIndex((chunk) => eventKind(chunk) === 'content') : -1
    const delayBefore = (index: number) => (index > 0 ? chunkDelayMs : 0) + (index === firstContent ? firstContentDelayMs : 0)
    const finish = (): void => {
      if (script.ending === 'end') response.end()
      else if (script.ending === 'destroy') this.destroy()
      else this.hold(script.holdMs)
    }
    let index = 0
    const step = (): void => {
      // Every event up to the next delay goes out in one write.
      let end = index + 1
      while (end < sent && delayBefore(end) === 0) end++
      const piece = joined(chunks.slice(index, end))
      index = end
      if (index < sent) {
        response.write(piece)
        return this.after(delayBefore(index), step)
      }
      if (script.ending === 'end') response.end(piece)
      else response.write(piece, finish)
    }
    if (sent === 0) return finish()
    this.after(delayBefore(0), step)
  }

  /** Runs `action` after `ms` on the exchange's one timer, which the connection's close clears; at once when `ms` is 0. */
  private after(ms: number, action: () => void): void {
    if (ms > 0) this.timer = setTimeout(action, ms)
    else action()
  }

  private send(answer: Answer): void {
    send(this.response, answer)
  }

  private sending(answer: Answer): () => void {
    return () => this.send(answer)
  }

  /** Holds the connection open: for `ms`, then drops it, or (undefined) until the client leaves. */
  private hold(ms: number | undefined): void {
    if (ms !== undefined) this.timer = setTimeout(() => this.destroy(), ms)
  }

  /** Drops the connection as a broken upstream would; not counted as a client abort. */
  private destroy(): void {
    this.destroyedOnPurpose = true
    this.response.socket?.destroy()
    this.response.destroy()
  }

  private finish(): void {
    clearTimeout(this.timer)
    const { response, request: { headers } } = this
    this.state.log.add({
      at: Date.now(),
      provider: this.dialect.provider,
      key: this.key,
      key_suffix: keySuffix(this.key),
      model: this.model,
      stream: this.stream,
      status: response.headersSent ? response.statusCode : 0,
      aborted: !response.writableFinished && !this.destroyedOnPurpose,
      ...(this.fault === undefined ? {} : { fault: this.fault }),
      path: this.path,
      ...header('traceparent', headers.traceparent),
      ...header('anthropic_version', headers['anthropic-version']),
      ...header('anthropic_beta', headers['anthropic-beta']),
      ...(this.prefill === undefined ? {} : { prefill: true as const }),
    })
  }
}

/** Anthropic's 400 for the `anthropic-beta` flags the rule refuses (as Claude on Vertex AI passes it through), if the header carries any. */
function betaRefusal(rule: SimulatorRule, header: string | string[] | undefined, requestId: string): Answer | undefined {
  if (rule.refuses_betas === undefined || typeof header !== 'string') return undefined
  const flags = header.split(',').map((flag) => flag.trim()).filter((flag) => rule.refuses_betas!.includes(flag))
  if (flags.length === 0) return undefined
  const message = `Unexpected value(s) ${flags.map((flag) => `\`${flag}\``).join(', ')} for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`
  return { status: 400, headers: ['content-type', 'application/json'], body: anthropicErrorBody('invalid_request_error', message, requestId) }
}

/** Anthropic's words when a model refuses a conversation that ends with the assistant's text. */
const PREFILL_REFUSED = 'This model does not support assistant message prefill. The conversation must end with a user message.'

/**
 * The assistant's text a conversation ends with, when it does (a prefill: the caller asks for
 * the rest): chat, Anthropic and Bedrock `messages`, Responses `input`, Gemini `contents`.
 */
function prefillOf(body: Record<string, unknown>): string | undefined {
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : Array.isArray(body.contents) ? body.contents : undefined
  const last = list?.[list.length - 1] as { role?: unknown; content?: unknown; parts?: unknown } | undefined
  if (last === undefined || (last.role !== 'assistant' && last.role !== 'model')) return undefined
  return textOf(last.content ?? last.parts)
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((part) => (typeof part === 'string' ? part : typeof (part as { text?: unknown })?.text === 'string' ? (part as { text: string }).text : '')).join('')
}
