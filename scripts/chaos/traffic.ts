/**
 * The chaos run's load: chat completions at a fixed rate over the live nodes, for a bounded
 * time and count, with every ending sorted into what it says about the gateway. Unlike the
 * demo's load (scripts/fleet/load.ts) it tells a node that was down (connection refused)
 * from one that was up and did not answer, and checks that errors are clear JSON.
 */

/** A node the load may send to. */
export interface TrafficTarget {
  nodeId: string
  url: string
}

export interface TrafficInit {
  /** The nodes up right now. */
  targets: () => TrafficTarget[]
  models: readonly string[]
  ratePerSecond: number
  /** Stops sending after this long... */
  durationMs: number
  /** ...or this many requests. */
  maxRequests: number
  /** Every n-th request streams. */
  streamEvery?: number
  /** A request with no answer after this long counts as unanswered. */
  timeoutMs: number
  /** True when the chaos run killed `nodeId` between `from` and `to` (epoch ms). */
  killedDuring: (nodeId: string, from: number, to: number) => boolean
}

/** How the requests sent to one node ended. */
export interface NodeTally {
  sent: number
  /** 200 with a complete completion (or a stream ending in [DONE]). */
  served: number
  /** Clear errors: OpenAI-style JSON `{error: {message}}`, by status (`stream_error` for an error event in a 200 stream). */
  failed: Record<string, number>
  /** Connection refused: the node was down, the request never reached it. */
  unreachable: number
  /** The node was killed while the request was in flight (nobody can answer after a SIGKILL). */
  cutByKill: number
  /** The node was up and not killed, yet no HTTP answer came (timeout, dropped connection). */
  noAnswer: number
  /** An answer that is neither a completion nor a clear JSON error. */
  unclear: number
}

/** One request that broke the "every request that reached a live node answered" rule. */
export interface UnansweredSample {
  nodeId: string
  at: number
  kind: 'no_answer' | 'unclear'
  detail: string
}

export interface TrafficRun {
  tallies: Map<string, NodeTally>
  samples: UnansweredSample[]
  /** Resolves once sending stopped and every request in flight ended. */
  done: Promise<void>
  /** Stops sending; requests in flight still finish (or time out). */
  stop(): void
}

const MAX_SAMPLES = 50

/** Starts the load. */
export function startTraffic(init: TrafficInit): TrafficRun {
  const tallies = new Map<string, NodeTally>()
  const samples: UnansweredSample[] = []
  const tally = (nodeId: string) => {
    let entry = tallies.get(nodeId)
    if (!entry) tallies.set(nodeId, (entry = { sent: 0, served: 0, failed: {}, unreachable: 0, cutByKill: 0, noAnswer: 0, unclear: 0 }))
    return entry
  }
  const note = (sample: UnansweredSample) => {
    if (samples.length < MAX_SAMPLES) samples.push(sample)
  }
  let stopped = false
  let wake: (() => void) | null = null

  const one = async (target: TrafficTarget, index: number): Promise<void> => {
    const entry = tally(target.nodeId)
    entry.sent++
    const stream = init.streamEvery !== undefined && index % init.streamEvery === 0
    const sentAt = Date.now()
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (index % 2 === 0) headers['x-bf-session-id'] = `chaos-${index % 11}`
    let response: Response
    let text: string
    try {
      response = await fetch(`${target.url}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: init.models[index % init.models.length], messages: [{ role: 'user', content: `chaos request ${index}` }], stream }),
        signal: AbortSignal.timeout(init.timeoutMs),
      })
      text = await response.text()
    } catch (error) {
      if (errorCode(error) === 'ECONNREFUSED') entry.unreachable++
      else if (init.killedDuring(target.nodeId, sentAt, Date.now())) entry.cutByKill++
      else {
        entry.noAnswer++
        note({ nodeId: target.nodeId, at: sentAt, kind: 'no_answer', detail: describeError(error) })
      }
      return
    }
    const outcome = judgeAnswer(response.status, stream, text)
    if (outcome.kind === 'served') entry.served++
    else if (outcome.kind === 'failed') entry.failed[outcome.label] = (entry.failed[outcome.label] ?? 0) + 1
    else if (init.killedDuring(target.nodeId, sentAt, Date.now())) entry.cutByKill++
    else {
      entry.unclear++
      note({ nodeId: target.nodeId, at: sentAt, kind: 'unclear', detail: `${response.status} ${outcome.detail}` })
    }
  }

  const inFlight = new Set<Promise<void>>()
  const done = (async () => {
    const started = Date.now()
    const interval = 1000 / init.ratePerSecond
    let count = 0
    let next = started
    while (!stopped && Date.now() - started < init.durationMs && count < init.maxRequests) {
      const targets = init.targets()
      if (targets.length > 0) {
        const request = one(targets[count % targets.length]!, count).finally(() => inFlight.delete(request))
        inFlight.add(request)
        count++
      }
      // Keep to the rate without bursting after a stall: a schedule that never falls more than a second behind.
      next = Math.max(next + interval, Date.now() - 1000)
      const wait = next - Date.now()
      if (wait > 0) await new Promise<void>((resolve) => setTimeout((wake = resolve), wait))
      wake = null
    }
    await Promise.all(inFlight)
  })()
  return {
    tallies,
    samples,
    done,
    stop() {
      stopped = true
      wake?.()
    },
  }
}

type Answer = { kind: 'served' } | { kind: 'failed'; label: string } | { kind: 'unclear'; detail: string }

/** Sorts one complete HTTP answer: a completion, a clear JSON error, or neither. */
export function judgeAnswer(status: number, stream: boolean, body: string): Answer {
  if (status === 200 && stream) {
    if (!body.includes('data: [DONE]')) return { kind: 'unclear', detail: `stream without [DONE]: ${body.slice(-200)}` }
    for (const line of body.split('\n')) {
      if (!line.startsWith('data: {')) continue
      const event = parseJson(line.slice(6))
      if (isClearError(event)) return { kind: 'failed', label: 'stream_error' }
    }
    return { kind: 'served' }
  }
  const parsed = parseJson(body)
  if (status === 200) {
    if (parsed !== null && typeof parsed === 'object' && Array.isArray((parsed as { choices?: unknown }).choices)) return { kind: 'served' }
    return { kind: 'unclear', detail: `200 without choices: ${body.slice(0, 200)}` }
  }
  if (isClearError(parsed)) return { kind: 'failed', label: String(status) }
  return { kind: 'unclear', detail: `not a JSON error: ${body.slice(0, 200)}` }
}

/** `{error: {message: string}}`, the OpenAI error shape. */
function isClearError(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false
  const error = (value as { error?: unknown }).error
  return error !== null && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string'
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return null
  }
}

/** The system error code under fetch's "fetch failed" (ECONNREFUSED, ECONNRESET, ...). */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

function describeError(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'no answer before the timeout'
  const code = errorCode(error)
  const message = error instanceof Error ? error.message : String(error)
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return `${code ?? 'error'}: ${message}${cause}`
}
