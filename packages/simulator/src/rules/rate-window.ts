const windowMs = 60_000

/** Requests and tokens a key used in the last minute, oldest first. */
class Window {
  readonly times: number[] = []
  readonly tokens: number[] = []
  head = 0
  usedTokens = 0

  prune(now: number): void {
    const cutoff = now - windowMs
    while (this.head < this.times.length && (this.times[this.head] ?? 0) <= cutoff) {
      this.usedTokens -= this.tokens[this.head] ?? 0
      this.head += 1
    }
    // Compact now and then so the arrays do not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head)
      this.tokens.splice(0, this.head)
      this.head = 0
    }
  }

  get usedRequests(): number {
    return this.times.length - this.head
  }

  /** Milliseconds until enough of the window expires to free `tokens` (and one request slot). */
  waitFor(now: number, needTokens: number, limit: number): number {
    let freed = 0
    for (let index = this.head; index < this.times.length; index += 1) {
      freed += this.tokens[index] ?? 0
      if (this.usedTokens - freed + needTokens <= limit) return (this.times[index] ?? now) + windowMs - now
    }
    return windowMs
  }
}

/** Rate-limit numbers for response headers. */
export interface RateView {
  requestsLimit: number
  requestsRemaining: number
  requestsResetMs: number
  tokensLimit: number
  tokensRemaining: number
  tokensResetMs: number
}

/** The outcome of a rate check: allowed, or refused with the wait until it would be. */
export type RateDecision =
  | { allowed: true; view: RateView }
  | { allowed: false; kind: 'requests' | 'tokens'; retryAfterMs: number; view: RateView; used: number; limit: number; requested: number }

/** Limits shown when no rule sets one: generous, like a high usage tier. */
export const defaultRequestsLimit = 10_000
export const defaultTokensLimit = 30_000_000

/** Per-key sliding one-minute windows for `rpm` / `tpm` rules. */
export class RateWindows {
  private readonly windows = new Map<string, Window>()

  /** Counts the request when allowed; a refused request does not use the window. */
  check(id: string, now: number, tokens: number, rpm: number | undefined, tpm: number | undefined): RateDecision {
    let window = this.windows.get(id)
    if (window === undefined) this.windows.set(id, (window = new Window()))
    window.prune(now)
    const requestsLimit = rpm ?? defaultRequestsLimit
    const tokensLimit = tpm ?? defaultTokensLimit
    const oldestReset = window.usedRequests > 0 ? (window.times[window.head] ?? now) + windowMs - now : 0
    // What the window holds when it is read: before a refused request, after an allowed one.
    const view = (tokensResetMs: number): RateView => ({
      requestsLimit,
      requestsRemaining: Math.max(0, requestsLimit - window.usedRequests),
      // An empty window before this request means this one frees up in a minute.
      requestsResetMs: oldestReset || windowMs,
      tokensLimit,
      tokensRemaining: Math.max(0, tokensLimit - window.usedTokens),
      tokensResetMs,
    })
    const refuse = (kind: 'requests' | 'tokens', retryAfterMs: number, used: number, limit: number, requested: number): RateDecision => ({ allowed: false, kind, retryAfterMs, view: view(retryAfterMs), used, limit, requested })
    if (rpm !== undefined && window.usedRequests + 1 > rpm) return refuse('requests', oldestReset, window.usedRequests, rpm, 1)
    if (tpm !== undefined && window.usedTokens + tokens > tpm) return refuse('tokens', window.waitFor(now, tokens, tpm), window.usedTokens, tpm, tokens)
    window.times.push(now)
    window.tokens.push(tokens)
    window.usedTokens += tokens
    return { allowed: true, view: view(oldestReset || windowMs) }
  }

  clear(): void {
    this.windows.clear()
  }
}
