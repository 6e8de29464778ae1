/** How long a key is held. Spec: reference/adaptive-load-balancing.txt, "How long a key is held". */
import type { HoldReason } from '../failures/failure-class.ts'
import type { HoldEntry } from './entry.ts'

const SECOND = 1000
const MINUTE = 60 * SECOND

/** The first rung of the ladder. */
export const LADDER_START_MS = 30 * SECOND

/** The shortest hold: a provider that asks for a sub-second wait must not get a refused call every second. */
export const MINIMUM_HOLD_MS = 10 * SECOND

/** A ladder wait varies by this fraction either way on each node, so the fleet does not check a key in the same second. */
export const LADDER_JITTER = 0.1

/** A hold released by a served request and placed again for the same reason within this long resumes its rung. */
export const RESUME_WINDOW_MS = 10 * MINUTE

/** The longest ladder wait for each reason, when the provider states none ("What holds a key"). */
export const LADDER_CAP_MS: Record<HoldReason, number> = {
  credential: 15 * MINUTE,
  quota: 5 * MINUTE,
  model_access: 5 * MINUTE,
  model_gone: 30 * MINUTE,
  region_blocked: 15 * MINUTE,
  rate_limit: 2 * MINUTE,
}

/** A doubling ladder's wait at `rung` (holds' and trials' alike): `firstMs` doubled `rung` times, capped at `capMs`. */
export function doubledWaitMs(firstMs: number, capMs: number, rung: number): number {
  return Math.min(firstMs * 2 ** Math.max(0, rung), capMs)
}

/** The highest rung of a doubling ladder worth climbing to: the first whose wait reaches the cap. */
export function topRungOf(firstMs: number, capMs: number): number {
  return Math.max(0, Math.ceil(Math.log2(capMs / firstMs)))
}

/** The base wait of a hold and where it came from: the provider's hint when it gave one (never under the 10 s floor), else the ladder (30 s doubled `rung` times, capped). */
export function baseWait(reason: HoldReason, rung: number, hintMs: number | null): Pick<HoldEntry, 'baseWaitMs' | 'waitSource'> {
  if (hintMs !== null) return { baseWaitMs: Math.max(hintMs, MINIMUM_HOLD_MS), waitSource: 'provider' }
  return { baseWaitMs: doubledWaitMs(LADDER_START_MS, LADDER_CAP_MS[reason], rung), waitSource: 'ladder' }
}

/** This node's wait for a hold: a ladder wait × [0.9, 1.1) from one draw of `random`; a provider wait exactly. */
export function nodeWaitMs(entry: Pick<HoldEntry, 'baseWaitMs' | 'waitSource'>, random: () => number): number {
  if (entry.waitSource === 'provider') return entry.baseWaitMs
  const factor = 1 - LADDER_JITTER + 2 * LADDER_JITTER * random()
  return Math.round(entry.baseWaitMs * factor)
}

/** The rung a new hold starts on: the tombstone's, when a served (or settled) request released it for the same reason within 10 minutes; else 0. */
export function startingRung(previous: HoldEntry | undefined, reason: HoldReason, now: number): number {
  if (!previous || previous.state !== 'released' || previous.releasedAt === null || previous.reason !== reason) return 0
  if (previous.releaseCause !== 'served' && previous.releaseCause !== 'settled') return 0
  return now - previous.releasedAt <= RESUME_WINDOW_MS ? previous.rung : 0
}
