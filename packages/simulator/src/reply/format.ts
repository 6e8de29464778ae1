import { randomBytes } from 'node:crypto'

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** Unique ids shaped like the providers' (`chatcmpl-…`, `msg_…`): a random per-process stem plus a counter, costing no entropy. */
export class IdMaker {
  private readonly stem = Array.from(randomBytes(12), (byte) => alphabet[byte % alphabet.length]).join('')
  private counter = 0

  next(prefix: string): string {
    this.counter += 1
    return prefix + this.stem + this.counter.toString(36).padStart(10, '0')
  }
}

/** A duration in Go's `time.Duration` text form, as OpenAI's reset headers use ("20ms", "1.5s", "6m0s"). */
export function goDuration(milliseconds: number): string {
  const ms = Math.max(0, Math.round(milliseconds))
  if (ms < 1000) return `${ms}ms`
  const hours = Math.floor(ms / 3_600_000)
  const minutes = Math.floor((ms % 3_600_000) / 60_000)
  const seconds = (ms % 60_000) / 1000
  const secondsText = `${Number.isInteger(seconds) ? seconds : Number(seconds.toFixed(3))}s`
  if (hours > 0) return `${hours}h${minutes}m${secondsText}`
  if (minutes > 0) return `${minutes}m${secondsText}`
  return secondsText
}

/** An RFC 3339 timestamp without fractional seconds, as Anthropic's reset headers use. */
export function rfc3339(epochMs: number): string {
  return new Date(Math.ceil(epochMs / 1000) * 1000).toISOString().replace('.000Z', 'Z')
}

/** Whole seconds for a `retry-after` header, never 0 for a real wait. */
export function retryAfterSeconds(milliseconds: number): number {
  return Math.max(1, Math.ceil(milliseconds / 1000))
}
