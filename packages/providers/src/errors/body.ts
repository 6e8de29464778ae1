/**
 * Reading an upstream error answer without knowing which provider sent it: most nest words and
 * codes under `error`, Bedrock and Mistral put them at the top (Bedrock's type in
 * `x-amzn-errortype` or `__type`), proxies answer in plain text; all gathered into one report.
 */

/** Longest message kept from a plain-text body or a message that is not a string. */
export const MESSAGE_LIMIT = 500

/** What an error answer says, gathered from whichever places its dialect uses. */
export interface ErrorReport {
  /** The provider's own message, verbatim where the body allows; '' when there is none. */
  message: string
  /** Text that helps classify but is not the message (OpenRouter's upstream `metadata.raw`). */
  context: string
  /** The code to report: the provider's own code or type string, null when it gave none. */
  primaryCode: string | null
  /** Every non-numeric code and type the answer carries, most specific first, for matching rules. */
  codes: string[]
  /** Gemini/Vertex QuotaFailure violations, as their quota ids and metric names. */
  quotaViolations: string[]
  /** Gemini/Vertex RetryInfo delays, raw (`"37s"`, or a `{ seconds, nanos }` object). */
  retryDelays: unknown[]
  /** True when the body carries moderation metadata (OpenRouter's `flagged_input`). */
  flagged: boolean
  /** The request field the provider names as the one it could not accept (OpenAI's `error.param`), null when none. */
  param: string | null
}

function isFields(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function textOf(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null
}

/** A status echoed as a code ("429", 429) says nothing the status does not. */
const NUMERIC_CODE = /^\d+$/

/** Mistral and FastAPI-style validators answer with objects or arrays where others put a string. */
function messageOf(value: unknown): string | null {
  const text = textOf(value)
  if (text !== null) return text
  if (isFields(value) || Array.isArray(value)) return JSON.stringify(value).slice(0, MESSAGE_LIMIT)
  return null
}

/** `ThrottlingException:http://internal.amazon.com/...` and `com.amazon.coral.service#ThrottlingException` -> `ThrottlingException`. */
function awsErrorType(raw: string | undefined): string | null {
  if (raw === undefined) return null
  const withoutSuffix = raw.split(':')[0] ?? ''
  const name = withoutSuffix.slice(withoutSuffix.lastIndexOf('#') + 1).trim()
  return name === '' ? null : name
}

/** Reads Google's `error.details` into the report (QuotaFailure violations, RetryInfo delays); returns its ErrorInfo reasons. */
function readGoogleDetails(details: unknown, report: ErrorReport): string[] {
  const reasons: string[] = []
  if (!Array.isArray(details)) return reasons
  for (const detail of details) {
    if (!isFields(detail)) continue
    const type = typeof detail['@type'] === 'string' ? detail['@type'] : ''
    if (type.endsWith('google.rpc.ErrorInfo')) {
      const reason = textOf(detail.reason)
      if (reason !== null) reasons.push(reason)
    } else if (type.endsWith('google.rpc.QuotaFailure') && Array.isArray(detail.violations)) {
      for (const violation of detail.violations) {
        if (!isFields(violation)) continue
        for (const field of ['quotaId', 'quotaMetric', 'subject', 'description']) {
          const text = textOf(violation[field])
          if (text !== null) report.quotaViolations.push(text)
        }
      }
    } else if (type.endsWith('google.rpc.RetryInfo') && detail.retryDelay !== undefined) {
      report.retryDelays.push(detail.retryDelay)
    }
  }
  return reasons
}

/** A text body read as the JSON it holds, when it holds JSON (failures arrive as text, whatever their content type says). */
function jsonInText(text: string): unknown {
  const trimmed = text.trim()
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return text
  try {
    return JSON.parse(trimmed) as unknown
  } catch {
    return text
  }
}

/** Adds the codes that are words (not a status echoed as a code) to the report's matching codes. */
function addCodes(report: ErrorReport, codes: (string | null)[]): void {
  for (const code of codes) if (code !== null && !NUMERIC_CODE.test(code)) report.codes.push(code)
}

/** Gathers message, codes and hints from an error answer: its parsed JSON, or its raw text. */
export function readErrorReport(headers: Record<string, string>, body: unknown): ErrorReport {
  const report: ErrorReport = { message: '', context: '', primaryCode: null, codes: [], quotaViolations: [], retryDelays: [], flagged: false, param: null }
  const headerType = awsErrorType(headers['x-amzn-errortype'])
  const parsed = typeof body === 'string' ? jsonInText(body) : body
  // Vertex streaming endpoints answer errors as a one-element array.
  const root = Array.isArray(parsed) && parsed.length > 0 ? parsed[0] : parsed
  if (!isFields(root)) {
    if (typeof root === 'string') report.message = root.trim().slice(0, MESSAGE_LIMIT)
    if (headerType !== null) report.codes.push(headerType)
    report.primaryCode = headerType
    return report
  }

  // Candidates for the reported code, in reporting order: the `error` object's, then the top level's.
  const reported: string[] = []
  const error = root.error
  if (isFields(error)) {
    report.message = messageOf(error.message) ?? ''
    const errorCode = textOf(error.code)
    const errorType = textOf(error.type)
    const googleStatus = textOf(error.status)
    const reasons = readGoogleDetails(error.details, report)
    report.param = textOf(error.param)

    // Most specific first: Anthropic's details.error_code and Azure's innererror refine the
    // outer code, and Google's ErrorInfo reason refines its canonical status.
    const anthropicDetail = isFields(error.details) ? textOf(error.details.error_code) : null
    const azureInner = isFields(error.innererror) ? textOf(error.innererror.code) : null
    addCodes(report, [anthropicDetail, azureInner, errorCode, ...reasons, errorType, googleStatus])
    reported.push(...[errorCode, errorType, reasons[0] ?? null, googleStatus].filter((code) => code !== null))

    if (isFields(error.metadata)) {
      report.context = textOf(error.metadata.raw) ?? ''
      report.flagged = error.metadata.flagged_input !== undefined
    }
  } else {
    report.message = textOf(error) ?? ''
  }

  report.message ||= messageOf(root.message) ?? messageOf(root.Message) ?? messageOf(root.detail) ?? ''
  const bedrockType = headerType ?? (typeof root.__type === 'string' ? awsErrorType(root.__type) : null)
  // Mistral's flat shape: {object:"error", message, type, code}; Anthropic's top-level type is just "error".
  const topType = textOf(root.type)
  const top = [bedrockType, textOf(root.code), topType === 'error' ? null : topType]
  addCodes(report, top)
  reported.push(...top.filter((code) => code !== null))

  // Prefer a word over a status echoed as a code; keep the echo when it is all there is.
  report.primaryCode = reported.find((code) => !NUMERIC_CODE.test(code)) ?? reported[0] ?? null
  return report
}
