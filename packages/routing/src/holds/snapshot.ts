/** Reading hold entries back from untrusted JSON (a Postgres snapshot, a peer): routing's own guard in front of a hold set. */
import type { Version } from './clock.ts'
import { isHoldReason } from '../failures/failure-class.ts'
import type { HoldEntry, ReleaseCause, TraceOrigin } from './entry.ts'

const RELEASE_CAUSES: readonly ReleaseCause[] = ['served', 'settled', 'operator', 'key_edit', 'deleted']

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0
}

function parseVersion(value: unknown): Version | null {
  if (!isRecord(value)) return null
  const { wallMs, counter, nodeId } = value
  if (!isTime(wallMs) || !isCount(counter) || typeof nodeId !== 'string' || nodeId === '') return null
  return { wallMs, counter, nodeId }
}

/** A well-formed hold entry built from `value`, or null when any field is missing or wrong. */
export function parseHoldEntry(value: unknown): HoldEntry | null {
  if (!isRecord(value)) return null
  const { provider, keyId, model, state, reason, message, since, waitStartedAt, baseWaitMs, waitSource } = value
  const { rung, checks, releasedAt, releaseCause } = value
  const version = parseVersion(value.version)
  if (!version) return null
  if (typeof provider !== 'string' || provider === '' || typeof keyId !== 'string' || keyId === '') return null
  if (model !== null && (typeof model !== 'string' || model === '')) return null
  if (state !== 'held' && state !== 'released') return null
  if (typeof reason !== 'string' || !isHoldReason(reason) || typeof message !== 'string') return null
  if (!isTime(since) || !isTime(waitStartedAt) || !isTime(baseWaitMs)) return null
  if (waitSource !== 'ladder' && waitSource !== 'provider') return null
  if (!isCount(rung) || !isCount(checks)) return null
  const released = state === 'released'
  if (released ? !isTime(releasedAt) : releasedAt !== null) return null
  if (released ? !RELEASE_CAUSES.includes(releaseCause as ReleaseCause) : releaseCause !== null) return null
  const release = released ? { releasedAt: releasedAt as number, releaseCause: releaseCause as ReleaseCause } : { releasedAt: null, releaseCause: null }
  const entry: HoldEntry = { provider, keyId, model, state, reason, message, since, waitStartedAt, baseWaitMs, waitSource, rung, checks, ...release, version }
  // Tracing metadata: a malformed origin is dropped, never the hold with it.
  const origin = parseOrigin(value.origin)
  if (origin !== null) entry.origin = origin
  return entry
}

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

/** A W3C trace and span id pair (not all zeros), or null. */
function parseOrigin(value: unknown): TraceOrigin | null {
  if (!isRecord(value)) return null
  const { traceId, spanId } = value
  if (typeof traceId !== 'string' || typeof spanId !== 'string' || !TRACE_ID.test(traceId) || !SPAN_ID.test(spanId)) return null
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null
  return { traceId, spanId }
}
