/** Rate-limit backoffs: a key whose rate-limit window is spent, left out for a model until it resets (regional, unlike holds). */
import type { RouteRef } from '../adaptive/types.ts'

/** A key to leave alone until its provider's rate-limit window resets (shared within a region). */
export interface RateLimitBackoff extends RouteRef {
  untilMs: number
}

/** This node's backoffs, by provider, key and model. */
export class RateLimitBackoffs {
  private readonly until = new Map<string, number>()

  /** Backs a key off; false when an equal or later backoff was already in force (nothing changed). */
  add(backoff: RateLimitBackoff): boolean {
    const id = backoffId(backoff.provider, backoff.keyId, backoff.model)
    if ((this.until.get(id) ?? 0) >= backoff.untilMs) return false
    this.until.set(id, backoff.untilMs)
    return true
  }

  /** When the backoff of a key for a model ends (epoch ms), or 0 when it is not backed off at `now`. */
  backedOffUntil(provider: string, keyId: string, model: string, now: number): number {
    if (this.until.size === 0) return 0
    const until = this.until.get(backoffId(provider, keyId, model))
    return until !== undefined && until > now ? until : 0
  }

  /** True while a backoff keeps the key out for the model. */
  isBackedOff(provider: string, keyId: string, model: string, now: number): boolean {
    return this.backedOffUntil(provider, keyId, model, now) > 0
  }

  /** Drops the backoffs of a key (it was edited or deleted); true when any was dropped. */
  forgetKey(provider: string, keyId: string): boolean {
    const prefix = `${provider}\u0000${keyId}\u0000`
    return this.dropWhere((id) => id.startsWith(prefix))
  }

  /** Drops expired backoffs; true when any expired (selection tables must be rebuilt). */
  expire(now: number): boolean {
    return this.dropWhere((_, until) => until <= now)
  }

  private dropWhere(drop: (id: string, until: number) => boolean): boolean {
    let dropped = false
    for (const [id, until] of this.until) if (drop(id, until)) dropped = this.until.delete(id)
    return dropped
  }
}

function backoffId(provider: string, keyId: string, model: string): string {
  return `${provider}\u0000${keyId}\u0000${model}`
}
