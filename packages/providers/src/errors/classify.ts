/** One failed upstream attempt as the normalized `AttemptFailure` routing acts on: an error answer, or none. */
import type { AttemptFailure, FailureClass, FailureScope } from '@switchboard/routing'
import { readErrorReport } from './body.ts'
import { decideVerdict } from './rules.ts'
import { waitHintFromReport } from './wait-hints.ts'

/** An upstream error answer as the adapter received it. */
interface FailedAnswer {
  status: number
  /** Response headers, names lower-case. */
  headers: Record<string, string>
  /** The body: its text (possibly empty; JSON in it is read as JSON), or the JSON already parsed. */
  body: unknown
  /** Epoch ms when the answer arrived, for wait hints given as dates. */
  now: number
}

/** Classifies a failed answer from any provider (rules.ts); the message is the provider's own, never anything we sent. */
export function classifyFailure(input: FailedAnswer): AttemptFailure {
  const report = readErrorReport(input.headers, input.body)
  const verdict = decideVerdict(input.status, report)
  // The wait the provider said; rate windows' resets only count for a rate limit (a spent one may be a daily window).
  const saidWaitMs = waitHintFromReport(input.headers, report, input.now, false)
  // A "rate limit" whose stated wait is an hour or more is a quota spent for the day (Azure's 429
  // "... Please retry after 86400 seconds"): no rate-limit window is that long.
  const dayLong = verdict.failureClass === 'rate_limit' && saidWaitMs !== null && saidWaitMs >= QUOTA_WAIT_MS
  const { failureClass, scope } = dayLong ? { failureClass: 'quota' as const, scope: verdict.scope } : verdict
  const waitHintMs = failureClass === 'rate_limit' ? waitHintFromReport(input.headers, report, input.now, true) : saidWaitMs
  return {
    failureClass,
    scope,
    status: input.status,
    waitHintMs,
    message: report.message === '' ? `HTTP ${input.status}` : report.message,
    code: report.primaryCode,
  }
}

/** The shortest wait that says quota rather than rate limit: longer than any documented rate-limit window (OpenAI's daily limits roll, naming waits of minutes). */
const QUOTA_WAIT_MS = 3_600_000

/** How deep to follow `cause` chains; undici nests the socket error one or two levels down. */
const CAUSE_DEPTH = 5

/** Errno-style codes: ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET, ERR_TLS_CERT_ALTNAME_INVALID. */
const ERRNO_CODE = /^[A-Z][A-Z0-9_]+$/

function errnoCode(error: unknown, depth = 0): string | null {
  if (typeof error !== 'object' || error === null || depth > CAUSE_DEPTH) return null
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown }
  if (typeof code === 'string' && ERRNO_CODE.test(code)) return code
  // The cause, then the errors of an AggregateError (a happy-eyeballs connect fails with one error per address tried).
  for (const inner of [cause, ...(Array.isArray(errors) ? errors : [])]) {
    const found = errnoCode(inner, depth + 1)
    if (found !== null) return found
  }
  return null
}

/** A failure without a wait hint, as every answerless ending and every failure we find ourselves is. */
export function attemptFailure(failureClass: FailureClass, status: number, message: string, code: string | null, scope: FailureScope = 'model'): AttemptFailure {
  return { failureClass, scope, status, waitHintMs: null, message, code }
}

/** A connection that failed before any answer; the message names only the errno code (messages can carry a URL with a key). */
export function networkFailure(error: unknown): AttemptFailure {
  const code = errnoCode(error)
  return attemptFailure('transient', 0, code === null ? 'network error' : `network error: ${code}`, code)
}

/** An attempt the gateway gave up on after `ms` milliseconds without an answer. */
export function timeoutFailure(ms: number): AttemptFailure {
  return attemptFailure('timeout', 0, `no answer within ${ms} ms`, null)
}

/** An attempt the caller abandoned (client disconnected or aborted). */
export function cancelledFailure(): AttemptFailure {
  return attemptFailure('cancelled', 0, 'request cancelled by the caller', null)
}
