import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FaultPreset, FaultSpec, SimulatorRule } from '../index.ts'
import type { Answer, ChatRequest, Dialect, FaultContext, StreamAnswer } from '../dialects/dialect.ts'
import { isAnswer } from '../dialects/dialect.ts'
import { buildReply } from '../reply/content.ts'
import { defaultRequestsLimit, defaultTokensLimit, type RateView } from '../rules/rate-window.ts'
import { sampleLatency } from '../rules/random.ts'
import { keySuffix } from './records.ts'
import type { SimulatorState } from './state.ts'

/** Headers-only view used when no rule limits the key: a fresh, generous window. */
const unlimitedView: RateView = {
  requestsLimit: defaultRequestsLimit, requestsRemaining: defaultRequestsLimit - 1, requestsResetMs: 6,
  tokensLimit: defaultTokensLimit, tokensRemaining: defaultTokensLimit, tokensResetMs: 0,
}

/** What the exchange will do once its latency has passed. */
type Plan =
  | { kind: 'answer'; answer: Answer }
  | { kind: 'stream'; answer: StreamAnswer; cutAfter: number | undefined }
  | { kind: 'cut'; answer: Answer }
  | { kind: 'hold'; afterMs: number | undefined }
  | { kind: 'reset' }

const ignore = (): void => {}

/** Stream pieces as one write: SSE text joined, binary frames concatenated. */
function joined(chunks: Array<string | Buffer>): string | Buffer {
  if (chunks.length === 0 || typeof chunks[0] === 'string') return chunks.join('')
  return Buffer.concat(chunks as Buffer[])
}

function pathOf(url: string | undefined): string {
  const value = url ?? '/'
  const query = value.indexOf('?')
  return query < 0 ? value : value.slice(0, query)
}

function anthropicHeaders(request: IncomingMessage): { anthropic_version?: string; anthropic_beta?: string } {
  const version = request.headers['anthropic-version']
  const beta = request.headers['anthropic-beta']
  const found: { anthropic_version?: string; anthropic_beta?: string } = {}
  if (typeof version === 'string') found.anthropic_version = version
  if (typeof beta === 'string') found.anthropic_beta = beta
  return found
}

/**
 * One provider request from arrival to record: read, validate, apply the
 * rules, wait, answer (or misbehave), and note how it ended. Every timer it
 * starts is cleared when the connection closes, so a client that gives up
 * costs nothing more.
 */
export class Exchange {
  private key = ''
  private model = ''
  private stream = false
  private fault: string | undefined
  private timer: NodeJS.Timeout | undefined
  private destroyedOnPurpose = false
  private readonly requestId: string

  constructor(
    private readonly state: SimulatorState,
    private readonly dialect: Dialect,
    private readonly request: IncomingMessage,
    private readonly response: ServerResponse,
    private readonly deployment: string | undefined,
    private readonly apiVersion: string | undefined,
  ) {
    this.requestId = state.ids.next('req_')
    state.log.started()
    request.on('error', ignore)
    response.on('error', ignore)
    response.once('close', () => this.finish())
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { body += chunk })
    request.on('end', () => this.handle(body))
  }

  private handle(text: string): void {
    const dialect = this.dialect
    const headers = this.request.headers
    this.model = this.deployment ?? ''
    const key = dialect.readKey(headers)
    if (key === undefined) return this.send(dialect.missingKey(this.requestId))
    this.key = key
    const refusal = dialect.checkHeaders(headers, this.requestId) ?? dialect.authenticate?.(this.request, text, this.requestId)
    if (refusal !== undefined) return this.send(refusal)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return this.send(dialect.invalidJson(this.requestId))
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return this.send(dialect.invalidJson(this.requestId))
    const chat = dialect.parse(body as Record<string, unknown>, this.deployment, this.apiVersion, this.requestId)
    if (isAnswer(chat)) return this.send(chat)
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
    let plan: Plan | undefined
    let rate = unlimitedView
    if (fault !== undefined) {
      plan = this.faultPlan(chat, rule, fault)
    } else if (rule.rpm !== undefined || rule.tpm !== undefined) {
      const tokens = chat.promptTokens + (rule.completion_tokens ?? 0)
      const decision = state.windows.check(`${this.dialect.provider}\u0000${this.key}`, Date.now(), tokens, rule.rpm, rule.tpm)
      if (decision.allowed) {
        rate = decision.view
      } else {
        this.fault = 'rate_limit'
        plan = { kind: 'answer', answer: this.dialect.rateLimited(decision, this.faultContext(chat, undefined)) }
      }
    }
    const latency = rule.latency_ms === undefined ? 0 : sampleLatency(rule.latency_ms, state.random)
    const act = plan === undefined
      ? () => this.succeed(chat, rule, rate)
      : () => this.perform(plan, rule.chunk_delay_ms ?? 0)
    if (latency > 0) {
      this.timer = setTimeout(() => { this.timer = undefined; act() }, latency)
    } else {
      act()
    }
  }

  private faultPlan(chat: ChatRequest, rule: SimulatorRule, fault: FaultSpec): Plan {
    if (typeof fault === 'object' && 'status' in fault) {
      this.fault = 'raw'
      const body = typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body)
      const headers: string[] = []
      let hasType = false
      for (const [name, value] of Object.entries(fault.headers ?? {})) {
        headers.push(name, value)
        if (name.toLowerCase() === 'content-type') hasType = true
      }
      if (!hasType) headers.push('content-type', 'application/json')
      return { kind: 'answer', answer: { status: fault.status, headers, body } }
    }
    const preset: FaultPreset = typeof fault === 'string' ? fault : fault.preset
    const options = typeof fault === 'string' ? undefined : fault
    this.fault = preset
    switch (preset) {
      case 'timeout': return { kind: 'hold', afterMs: options?.after_ms }
      case 'reset': return { kind: 'reset' }
      case 'stream_cut': {
        const reply = buildReply(this.dialect.provider, chat.model, rule.completion_tokens, chat.maxTokens)
        const context = { ids: this.state.ids, now: Date.now(), requestId: this.requestId, rate: unlimitedView }
        if (chat.stream) {
          const answer = this.dialect.stream(chat, reply, context)
          return { kind: 'stream', answer, cutAfter: Math.max(1, Math.floor(answer.chunks.length / 2)) }
        }
        return { kind: 'cut', answer: this.dialect.complete(chat, reply, context) }
      }
      case 'stream_error': {
        // The in-band error only exists in a stream; a plain request (or a dialect without one) gets the 500.
        if (!chat.stream || this.dialect.streamError === undefined) return { kind: 'answer', answer: this.dialect.fault('server_error', this.faultContext(chat, options)) }
        const reply = buildReply(this.dialect.provider, chat.model, rule.completion_tokens, chat.maxTokens)
        const context = { ids: this.state.ids, now: Date.now(), requestId: this.requestId, rate: unlimitedView }
        return { kind: 'stream', answer: this.dialect.streamError(chat, reply, context, options?.message), cutAfter: undefined }
      }
      default: return { kind: 'answer', answer: this.dialect.fault(preset, this.faultContext(chat, options)) }
    }
  }

  private faultContext(chat: ChatRequest, options: { retry_after_s?: number; message?: string } | undefined): FaultContext {
    return {
      model: chat.model, key: this.key, apiVersion: chat.apiVersion,
      retryAfterS: options?.retry_after_s, message: options?.message, requestId: this.requestId,
    }
  }

  private succeed(chat: ChatRequest, rule: SimulatorRule | undefined, rate: RateView): void {
    const reply = buildReply(this.dialect.provider, chat.model, rule?.completion_tokens, chat.maxTokens)
    const context = { ids: this.state.ids, now: Date.now(), requestId: this.requestId, rate }
    if (chat.stream) {
      this.perform({ kind: 'stream', answer: this.dialect.stream(chat, reply, context), cutAfter: undefined }, rule?.chunk_delay_ms ?? 0)
    } else {
      this.send(this.dialect.complete(chat, reply, context))
    }
  }

  private perform(plan: Plan, chunkDelay: number): void {
    switch (plan.kind) {
      case 'answer': return this.send(plan.answer)
      case 'stream': return this.writeStream(plan.answer, plan.cutAfter, chunkDelay)
      case 'cut': {
        const { answer } = plan
        this.response.writeHead(answer.status, answer.headers)
        this.response.write(answer.body.slice(0, Math.floor(answer.body.length / 2)), () => this.destroy())
        return
      }
      case 'hold':
        if (plan.afterMs !== undefined) this.timer = setTimeout(() => { this.timer = undefined; this.destroy() }, plan.afterMs)
        return
      case 'reset': return this.destroy()
    }
  }

  private writeStream(answer: StreamAnswer, cutAfter: number | undefined, chunkDelay: number): void {
    const response = this.response
    const chunks = answer.chunks
    const stop = cutAfter ?? chunks.length
    response.writeHead(200, answer.headers)
    if (chunkDelay <= 0) {
      if (cutAfter === undefined) return void response.end(joined(chunks))
      response.write(joined(chunks.slice(0, stop)), () => this.destroy())
      return
    }
    let index = 0
    const step = (): void => {
      this.timer = undefined
      const chunk = chunks[index] ?? ''
      index += 1
      if (index >= stop) {
        if (cutAfter === undefined) response.end(chunk)
        else response.write(chunk, () => this.destroy())
        return
      }
      response.write(chunk)
      this.timer = setTimeout(step, chunkDelay)
    }
    step()
  }

  private send(answer: Answer): void {
    this.response.writeHead(answer.status, answer.headers)
    this.response.end(answer.body)
  }

  /** Drops the connection as a broken upstream would; not counted as a client abort. */
  private destroy(): void {
    this.destroyedOnPurpose = true
    this.response.socket?.destroy()
    this.response.destroy()
  }

  private finish(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    const response = this.response
    const record = {
      at: Date.now(),
      provider: this.dialect.provider,
      key: this.key,
      key_suffix: keySuffix(this.key),
      model: this.model,
      stream: this.stream,
      status: response.headersSent ? response.statusCode : 0,
      aborted: !response.writableFinished && !this.destroyedOnPurpose,
      ...(this.fault === undefined ? {} : { fault: this.fault }),
      path: pathOf(this.request.url),
      ...anthropicHeaders(this.request),
    }
    this.state.log.add(record)
  }
}
