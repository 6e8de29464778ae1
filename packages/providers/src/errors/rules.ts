/**
 * The rules that turn an error report into a failure class and scope.
 *
 * Three passes, most trusted first (reference: adaptive-load-balancing, "What holds a key"):
 * 1. the provider's own code or type, when that code decides the class by itself;
 * 2. the provider's wording, for answers whose code is generic (`invalid_request_error`,
 *    `INVALID_ARGUMENT`, `ValidationException`) or missing;
 * 3. the HTTP status.
 * A 2xx/3xx answer carrying an error (a stream that failed after the headers) is judged
 * by pass 1 only: without a status, wording alone is too weak to hold a key.
 */
import type { FailureClass, FailureScope } from '@switchboard/routing'
import type { ErrorReport } from './body.ts'

/** A class and what it applies to. */
export interface Verdict {
  failureClass: FailureClass
  scope: FailureScope
}

/** What a rule may look at. */
interface Facts {
  status: number
  /** Message and context, lower-cased, URLs removed (Gemini links to ".../rate-limits" in quota errors). */
  text: string
  report: ErrorReport
}

function verdict(failureClass: FailureClass, scope: FailureScope = 'model'): Verdict {
  return { failureClass, scope }
}

const KEY_CREDENTIAL = verdict('credential', 'key')
const KEY_QUOTA = verdict('quota', 'key')
const MODEL_QUOTA = verdict('quota')
const MODEL_ACCESS = verdict('model_access')
const MODEL_GONE = verdict('model_gone')
const REGION_BLOCKED = verdict('region_blocked')
const RATE_LIMIT = verdict('rate_limit')
const TRANSIENT = verdict('transient')
const CALLER_FAULT = verdict('caller_fault')
const UNKNOWN = verdict('unknown')

// Wording, matched against lower-cased text. Each names what the provider said, not how we react.
const SAYS_CREDENTIAL_BAD =
  /incorrect api key|invalid api key|api key not valid|api key expired|invalid x-api-key|invalid authentication|authentication credentials|invalid subscription key|security token included in the request is (?:invalid|expired)|no auth credentials|reported as leaked|api key (?:has been|was) (?:revoked|disabled|deleted)|unregistered callers/
const SAYS_REGION_BLOCKED =
  /country, region,? or territory (?:is )?not supported|unsupported_country|user location is not supported|not available in your (?:country|region)|unsupported (?:country|region|location)/
const SAYS_ACCOUNT_OUT_OF_MONEY =
  /credit balance|insufficient (?:credits|balance|funds)|requires more credits|can only afford|prepa(?:y|id|yment) credits|billing (?:hard )?limit|spend(?:ing)? limit|api usage limits/
const SAYS_QUOTA_EXCEEDED = /exceeded your current quota/
const SAYS_RATE_LIMITED = /rate.?limit|too many requests|throttl|slow down/
const SAYS_OVERLOADED = /overloaded|temporarily unavailable/
const SAYS_NO_MODEL_ACCESS =
  /(?:does|do) not have access to (?:the )?model|(?:does|do) not have access to it|don't have access to the model|not allowed to (?:sample from|use|access) (?:this|the) model|not authorized to (?:use|access) (?:this|the) model/
const SAYS_MODEL_RETIRED =
  /model\b.*\b(?:has been|was|is now|is) (?:deprecated|decommissioned|retired|discontinued)|end of (?:its )?life|model\b.*\bno longer (?:supported|available)/
const SAYS_MODEL_MISSING =
  /model\b.*\bdoes not exist|model not found|is not found for api version|not a valid model|invalid model|unknown model|could not resolve the foundation model|no endpoints found/
const SAYS_REQUEST_REFUSED =
  /flagged|moderation|content (?:management )?polic|safety system|maximum context length|prompt is too long/
const MENTIONS_MODEL = /\bmodels?\b/

/** Gemini/Vertex RESOURCE_EXHAUSTED covers rate limits, daily per-model quotas and prepaid credit alike. */
function resourceExhausted(facts: Facts): Verdict {
  if (facts.status === 402 || SAYS_ACCOUNT_OUT_OF_MONEY.test(facts.text)) return KEY_QUOTA
  const violations = facts.report.quotaViolations
  // A daily quota per project and model does not refill within a rate-limit window: hold the
  // model as out of quota. The project's other models have their own quotas, so not the key.
  if (violations.some((violation) => /per ?day|daily/i.test(violation))) return MODEL_QUOTA
  if (violations.length > 0) return RATE_LIMIT
  // "You exceeded your current quota" with no breakdown is the sticky, until-midnight kind;
  // Vertex's "Resource exhausted. Please try again later." is shared capacity, a rate limit.
  return SAYS_QUOTA_EXCEEDED.test(facts.text) ? MODEL_QUOTA : RATE_LIMIT
}

/** OpenAI/Groq `model_not_found` covers retired models, typos and models this key may not use. */
function modelNotFound(facts: Facts): Verdict {
  if (SAYS_MODEL_RETIRED.test(facts.text)) return MODEL_GONE
  if (SAYS_NO_MODEL_ACCESS.test(facts.text)) return MODEL_ACCESS
  return /does not exist/.test(facts.text) ? MODEL_GONE : MODEL_ACCESS
}

/** Server-side codes: a 5xx that reports a rate limit holds the model like a 429. */
function serverSide(facts: Facts): Verdict {
  return SAYS_RATE_LIMITED.test(facts.text) && !SAYS_OVERLOADED.test(facts.text) ? RATE_LIMIT : TRANSIENT
}

/** Codes that decide the class on their own, lower-cased. */
const DECISIVE_CODES: ReadonlyMap<string, Verdict | ((facts: Facts) => Verdict)> = new Map<
  string,
  Verdict | ((facts: Facts) => Verdict)
>([
  // A key the provider does not accept fails for every model.
  ...['invalid_api_key', 'authentication_error', 'api_key_invalid', 'unauthenticated', 'account_deactivated']
    .map((code) => [code, KEY_CREDENTIAL] as const),
  ...['unrecognizedclientexception', 'invalidsignatureexception', 'expiredtokenexception', 'invalidclienttokenid']
    .map((code) => [code, KEY_CREDENTIAL] as const),
  ...['access_token_expired', 'credentials_missing', 'consumer_suspended', 'api_key_service_blocked']
    .map((code) => [code, KEY_CREDENTIAL] as const),
  // Google's SERVICE_DISABLED: the API is off for the key's project, so no model can answer it.
  ['service_disabled', KEY_CREDENTIAL],
  // Account-level money: the spec holds the whole key (a 402, insufficient_quota, credit balance).
  ...['insufficient_quota', 'billing_error', 'credit_balance_exhausted', 'billing_hard_limit_reached',
    'enforced_spend_limit_reached'].map((code) => [code, KEY_QUOTA] as const),
  ['resource_exhausted', resourceExhausted],
  ['model_not_found', modelNotFound],
  // Azure: the deployment is this key's resource's name for the model. It may be minutes old
  // ("created within the last 5 minutes") or deleted, and the model still exists elsewhere,
  // so it is this key's access to the model that fails: model_access, its shorter ladder.
  ['deploymentnotfound', MODEL_ACCESS],
  ['accessdeniedexception', MODEL_ACCESS],
  ['iam_permission_denied', MODEL_ACCESS],
  ...['model_decommissioned', 'model_deprecated', 'invalid_model', 'resourcenotfoundexception']
    .map((code) => [code, MODEL_GONE] as const),
  ['unsupported_country_region_territory', REGION_BLOCKED],
  ...['rate_limit_exceeded', 'rate_limit_error', 'rate_limited', 'throttlingexception', 'too_many_requests',
    'slow_down'].map((code) => [code, RATE_LIMIT] as const),
  // Bedrock: "Your request exceeds the service quota for your account. You can resubmit your
  // request later." A per-minute token/request quota that refills: a rate limit, not spent money.
  ['servicequotaexceededexception', RATE_LIMIT],
  // ModelNotReadyException arrives as a 429, yet it is about the model warming up, not the key.
  ...['overloaded_error', 'modelnotreadyexception'].map((code) => [code, TRANSIENT] as const),
  ...['serviceunavailableexception', 'internalserverexception', 'modeltimeoutexception', 'modelstreamerrorexception',
    'server_error', 'api_error', 'unavailable', 'internal', 'deadline_exceeded'].map((code) => [code, serverSide] as const),
  ...['context_length_exceeded', 'content_policy_violation', 'content_filter', 'responsibleaipolicyviolation',
    'request_too_large'].map((code) => [code, CALLER_FAULT] as const),
])

function byCode(facts: Facts): Verdict | null {
  for (const code of facts.report.codes) {
    const rule = DECISIVE_CODES.get(code.toLowerCase())
    if (rule !== undefined) return typeof rule === 'function' ? rule(facts) : rule
  }
  return null
}

function byWording(facts: Facts): Verdict | null {
  const { text, status } = facts
  if (text === '') return null
  if (SAYS_CREDENTIAL_BAD.test(text)) return KEY_CREDENTIAL
  if (SAYS_REGION_BLOCKED.test(text)) return REGION_BLOCKED
  // Anthropic answers requests from unsupported regions with a bare 403 "Request not allowed".
  if (status === 403 && /request not allowed/.test(text)) return REGION_BLOCKED
  if (SAYS_ACCOUNT_OUT_OF_MONEY.test(text)) return KEY_QUOTA
  if (SAYS_QUOTA_EXCEEDED.test(text)) return MODEL_QUOTA
  if (facts.report.flagged || SAYS_REQUEST_REFUSED.test(text)) return CALLER_FAULT
  if (SAYS_RATE_LIMITED.test(text)) return RATE_LIMIT
  if (SAYS_OVERLOADED.test(text)) return TRANSIENT
  if (SAYS_MODEL_RETIRED.test(text)) return MODEL_GONE
  if (SAYS_NO_MODEL_ACCESS.test(text)) return MODEL_ACCESS
  if (SAYS_MODEL_MISSING.test(text)) return MODEL_GONE
  return null
}

const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([408, 500, 502, 503, 504, 529])
const CALLER_FAULT_STATUSES: ReadonlySet<number> = new Set([400, 405, 413, 414, 415, 422])

function byStatus(facts: Facts): Verdict {
  const { status, text } = facts
  if (status === 401) return KEY_CREDENTIAL
  if (status === 402) return KEY_QUOTA
  // A bare 403 refuses this key something; without words saying what, hold only the model.
  if (status === 403) return MODEL_ACCESS
  // A 404 naming a model is a missing model; any other 404 is a wrong route, the caller's.
  if (status === 404) return MENTIONS_MODEL.test(text) ? MODEL_GONE : CALLER_FAULT
  if (status === 410) return MODEL_GONE
  if (status === 429) return RATE_LIMIT
  if (TRANSIENT_STATUSES.has(status)) return TRANSIENT
  if (CALLER_FAULT_STATUSES.has(status)) return CALLER_FAULT
  return UNKNOWN
}

/** Decides class and scope of a failed answer from its status and what its body said. */
export function decideVerdict(status: number, report: ErrorReport): Verdict {
  const text = `${report.message} ${report.context}`
    .replace(/https?:\/\/\S+/g, ' ')
    .toLowerCase()
    .trim()
  const facts: Facts = { status, text, report }
  const coded = byCode(facts)
  if (coded !== null) return coded
  if (status < 400) return UNKNOWN
  return byWording(facts) ?? byStatus(facts)
}
