/**
 * The rules that turn an error report into a failure class and scope, most trusted first
 * ("What holds a key"): the provider's own code when it decides alone, then its wording (for
 * generic or missing codes), then the HTTP status. `caller_fault` only where the provider says
 * the request cannot be served as written: it stops the request with no retry or fallback.
 * A 2xx/3xx carrying an error is judged by its code alone: wording is too weak to hold a key.
 */
import type { AttemptFailure, FailureClass, FailureScope } from '@switchboard/routing'
import type { ErrorReport } from './body.ts'

/** A class and what it applies to. */
export type Verdict = Pick<AttemptFailure, 'failureClass' | 'scope'>

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
const CONTEXT_LENGTH = verdict('context_length')
const UNKNOWN = verdict('unknown')

// Wording, matched against lower-cased text. Each names what the provider said, not how we react.
const SAYS_CREDENTIAL_BAD = /incorrect api key|invalid api key|api key not valid|api key expired|invalid x-api-key|invalid authentication|authentication credentials|authentication failed|invalid subscription key|security token included in the request is (?:invalid|expired)|no auth credentials|reported as leaked|api key (?:has been|was) (?:revoked|disabled|deleted)|unregistered callers|api key is valid/
/** The account or organization behind the key is shut off: every request on the key fails, whatever it asks. */
const SAYS_ACCOUNT_SHUT = /account (?:was|has been|is) (?:flagged|terminated|deactivated|suspended|disabled|banned)|(?:organization|account) has been restricted|your resource has been (?:temporarily )?blocked|has not been used in project|api has not been enabled|is disabled\. enable it/
const SAYS_REGION_BLOCKED = /country, region,? or territory (?:is )?not supported|unsupported_country|unsupported countr(?:y|ies)|user location is not supported|not available in your (?:country|region)|unsupported (?:region|location)/
const SAYS_ACCOUNT_OUT_OF_MONEY = /credit balance|insufficient (?:credits|balance|funds)|requires more credits|can only afford|prepa(?:y|id|yment) credits|billing (?:hard )?limit|spend(?:ing)? (?:limit|cap)|api usage limits|key limit exceeded|account is not active|billing to be enabled|billing (?:is )?(?:not enabled|disabled)/
const SAYS_QUOTA_EXCEEDED = /exceeded your current quota/
/** Azure's 403 "Out of call volume quota ... replenished in d.hh:mm:ss": quota (waiting cures it), not a refused key. */
const SAYS_CALL_VOLUME_QUOTA = /out of call volume quota/
/** A quota that refills once a day (Gemini's per-model daily quotas), not within a rate-limit window. */
const SAYS_PER_DAY = /per.?day|daily/
const SAYS_RATE_LIMITED = /rate.?limit|too many requests|throttl|slow down/
/** The provider's own capacity, not the key's limits (Azure's 429 "experiencing high demand ... during peak load"). */
const SAYS_OVERLOADED = /overloaded|temporarily unavailable|experiencing high demand/
/** A content gate in front of one model or key (OpenRouter's moderation, Mistral's guardrail 403): another may serve it. */
const SAYS_CONTENT_GATE = /guardrail|input was flagged|requires moderation|moderation:|request blocked/
/** The request is longer than the model's context window (another model or provider may hold it). */
const SAYS_CONTEXT_TOO_LONG = /maximum context length|context length|context window|context limit|prompt is too long|input is too long|too many input tokens|input token count .*exceeds|exceeds the maximum number of tokens|reduce the length of the (?:messages|prompt|input)|size limit exceeded by \d+ tokens|shorter or fewer inputs/
/** The provider says the request itself cannot be served as written: its content, size or form. */
const SAYS_REQUEST_REFUSED = /content (?:management )?polic|safety system|size limit exceeded/
const SAYS_NO_MODEL_ACCESS = /(?:does|do) not have access to (?:the )?model|(?:does|do) not have access to it|don't have access to the model|not allowed to (?:sample from|use|access) (?:this|the|publisher) model|not authorized to (?:use|access) (?:this|the) model|not have permission to use|not servable in region|on-demand throughput isn.?t supported|model identifier is invalid|requires terms acceptance|blocked at the organization level|use case details have not been submitted|no endpoints found|no allowed providers/
const SAYS_MODEL_RETIRED = /model\b.*\b(?:has been|was|is now|is) (?:deprecated|decommissioned|retired|discontinued|removed)|end of (?:its )?life|model\b.*\bno longer (?:supported|available)|model\b.*\bis in deprecation/
/** A model the key cannot reach: a typo, a model not enabled for the key, or one this provider does not serve. */
const SAYS_MODEL_MISSING = /model\b.*\bdoes not exist|model\b.*\bnot found|is not found for api version|not a valid model|invalid model|unknown model|could not resolve the foundation model|model\b.*\bis not available|is not available\. please use/
const MENTIONS_MODEL = /\bmodels?\b/

/** Gemini/Vertex RESOURCE_EXHAUSTED: a rate limit unless it names money or a daily quota. */
function resourceExhausted(facts: Facts): Verdict {
  if (facts.status === 402 || SAYS_ACCOUNT_OUT_OF_MONEY.test(facts.text)) return KEY_QUOTA
  // A daily quota per project and model: the model is out of quota (the project's other models have their own).
  const violations = facts.report.quotaViolations
  if (violations.some((violation) => SAYS_PER_DAY.test(violation.toLowerCase())) || SAYS_PER_DAY.test(facts.text)) return MODEL_QUOTA
  return RATE_LIMIT
}

/** Not-found codes not about models alone: about the model when the words say so, else a resource we asked for wrongly. */
function notFound(facts: Facts): Verdict {
  if (SAYS_MODEL_RETIRED.test(facts.text)) return MODEL_GONE
  if (SAYS_NO_MODEL_ACCESS.test(facts.text) || SAYS_MODEL_MISSING.test(facts.text) || MENTIONS_MODEL.test(facts.text)) return MODEL_ACCESS
  return UNKNOWN
}

/** Words of a rate limit, not of the provider's own overload. */
function reportsRateLimit(facts: Facts): boolean {
  return SAYS_RATE_LIMITED.test(facts.text) && !SAYS_OVERLOADED.test(facts.text)
}

type Rule = Verdict | ((facts: Facts) => Verdict)

/** A code table from rows of a rule and the (lower-cased) codes it decides. */
function codeTable<R>(rows: [R, ...string[]][]): ReadonlyMap<string, R> {
  return new Map(rows.flatMap(([rule, ...codes]) => codes.map((code) => [code, rule] as const)))
}

/** Codes that decide the class on their own, lower-cased. */
const DECISIVE_CODES = codeTable<Rule>([
  // A key the provider does not accept, an account shut, an API off for the key's project: every model fails.
  [KEY_CREDENTIAL, 'invalid_api_key', 'authentication_error', 'api_key_invalid', 'unauthenticated', 'account_deactivated',
    'unrecognizedclientexception', 'invalidsignatureexception', 'expiredtokenexception', 'invalidclienttokenid',
    'access_token_expired', 'credentials_missing', 'consumer_suspended', 'api_key_service_blocked',
    'access_terminated', 'organization_restricted', 'service_disabled'],
  // Account-level money holds the whole key (Groq `blocked_api_access`: blocked until billing is settled).
  [KEY_QUOTA, 'insufficient_quota', 'billing_error', 'credit_balance_exhausted', 'billing_hard_limit_reached',
    'enforced_spend_limit_reached', 'organization_spend_limit_exceeded', 'blocked_api_access'],
  [resourceExhausted, 'resource_exhausted'],
  // OpenAI/Groq/Mistral `model_not_found`: model_gone only when the words say retired, else this key's access to it.
  [(facts) => (SAYS_MODEL_RETIRED.test(facts.text) ? MODEL_GONE : MODEL_ACCESS), 'model_not_found'],
  [notFound, 'not_found_error', 'not_found', 'resourcenotfoundexception'],
  // A model this key cannot reach here; Azure's DeploymentNotFound too (a deployment minutes old
  // or deleted is this key's resource's, and the model still exists elsewhere).
  [MODEL_ACCESS, 'deploymentnotfound', 'iam_permission_denied', 'unknown_model', 'invalid_model', 'model_terms_required',
    'model_permission_blocked_org', 'ftuformnotfilled'],
  // Bedrock AccessDeniedException: a rejected key when its words say so, else no access to the model.
  [(facts) => (SAYS_CREDENTIAL_BAD.test(facts.text) ? KEY_CREDENTIAL : MODEL_ACCESS), 'accessdeniedexception'],
  [MODEL_GONE, 'model_decommissioned', 'model_deprecated', 'servicemodeldeprecating'],
  [REGION_BLOCKED, 'unsupported_country_region_territory'],
  // A rate-limit code whose words name spent money (Anthropic's monthly spend limit as a 429 rate_limit_error).
  [(facts) => (SAYS_ACCOUNT_OUT_OF_MONEY.test(facts.text) ? KEY_QUOTA : RATE_LIMIT), 'rate_limit_exceeded', 'rate_limit_error', 'rate_limited', 'throttlingexception', 'too_many_requests', 'slow_down'],
  // Bedrock's service quota ("You can resubmit your request later") refills per minute: a rate limit.
  [RATE_LIMIT, 'servicequotaexceededexception'],
  // ModelNotReadyException arrives as a 429, yet it is about the model warming up, not the key.
  [TRANSIENT, 'overloaded_error', 'modelnotreadyexception'],
  // Server-side codes: one that reports a rate limit holds the model like a 429.
  [(facts) => (reportsRateLimit(facts) ? RATE_LIMIT : TRANSIENT), 'serviceunavailableexception', 'internalserverexception', 'modeltimeoutexception', 'modelstreamerrorexception',
    'server_error', 'api_error', 'unavailable', 'internal', 'deadline_exceeded'],
  // The caller's content refused, unless a 403 gate in front of one model or key (another may pass).
  [(facts) => (facts.status === 403 || SAYS_CONTENT_GATE.test(facts.text) ? UNKNOWN : CALLER_FAULT), 'content_policy_violation', 'content_filter', 'responsibleaipolicyviolation'],
  [CONTEXT_LENGTH, 'context_length_exceeded'],
  [CALLER_FAULT, 'request_too_large', 'invalid_encrypted_content'],
])

/**
 * Codes that name a kind of refusal without saying what was refused: they decide only when the
 * wording said nothing more specific. Google `FAILED_PRECONDITION`: the project is not set up for
 * the model, never the request's form.
 */
const GENERIC_CODES = codeTable<Rule>([
  // A permission refusal naming a model or resource: this key may not use it; naming neither, it refuses the key.
  [(facts) => (MENTIONS_MODEL.test(facts.text) || /\bresource\b/.test(facts.text) ? MODEL_ACCESS : byStatus(facts)), 'permission_error', 'permissions_error', 'permission_denied'],
  [(facts) => (MENTIONS_MODEL.test(facts.text) ? MODEL_ACCESS : UNKNOWN), 'failed_precondition'],
])

function byCode(facts: Facts, rules: ReadonlyMap<string, Rule>): Verdict | null {
  for (const code of facts.report.codes) {
    const rule = rules.get(code.toLowerCase())
    if (rule !== undefined) return typeof rule === 'function' ? rule(facts) : rule
  }
  return null
}

/** The words of a 4xx answer, most telling first. */
function byWording(facts: Facts): Verdict | null {
  const { text, status } = facts
  if (text === '') return null
  if (SAYS_CALL_VOLUME_QUOTA.test(text)) return KEY_QUOTA
  if (SAYS_CREDENTIAL_BAD.test(text) || SAYS_ACCOUNT_SHUT.test(text)) return KEY_CREDENTIAL
  if (SAYS_REGION_BLOCKED.test(text)) return REGION_BLOCKED
  // Anthropic answers requests from unsupported regions with a bare 403 "Request not allowed".
  if (status === 403 && /request not allowed/.test(text)) return REGION_BLOCKED
  if (SAYS_ACCOUNT_OUT_OF_MONEY.test(text)) return KEY_QUOTA
  if (SAYS_QUOTA_EXCEEDED.test(text)) return SAYS_PER_DAY.test(text) ? MODEL_QUOTA : RATE_LIMIT
  if (facts.report.flagged || SAYS_CONTENT_GATE.test(text)) return UNKNOWN
  if (SAYS_CONTEXT_TOO_LONG.test(text)) return CONTEXT_LENGTH
  if (SAYS_REQUEST_REFUSED.test(text)) return CALLER_FAULT
  if (SAYS_RATE_LIMITED.test(text)) return RATE_LIMIT
  if (SAYS_OVERLOADED.test(text)) return TRANSIENT
  if (SAYS_MODEL_RETIRED.test(text)) return MODEL_GONE
  if (SAYS_NO_MODEL_ACCESS.test(text) || SAYS_MODEL_MISSING.test(text)) return MODEL_ACCESS
  return null
}

const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([408, 500, 502, 503, 504, 529])
/** Statuses that say the request was refused as written, when the provider also said why. */
const REQUEST_STATUSES: ReadonlySet<number> = new Set([400, 413, 422])

/** An HTML page comes from an edge or proxy in front of the API, not from the API's error handling. */
const HTML_PAGE = /^<(?:!doctype|html|head|body)\b/

/** True when the answer carries the provider's own words or code, not just a status or an edge's page. */
function saysWhy(facts: Facts): boolean {
  return facts.report.primaryCode !== null || (facts.text !== '' && !HTML_PAGE.test(facts.text))
}

function byStatus(facts: Facts): Verdict {
  const { status, text } = facts
  if (status === 402) return KEY_QUOTA
  // A 403 that names nothing more specific refuses the key (a network rule, a blocked resource).
  if (status === 403) return KEY_CREDENTIAL
  // A 404 naming a request field is the request's, one naming a model that model out of reach;
  // any other is a wrong upstream path, which says nothing about the request or the key.
  if (status === 404) {
    if (facts.report.param !== null) return CALLER_FAULT
    return MENTIONS_MODEL.test(text) ? MODEL_ACCESS : UNKNOWN
  }
  if (status === 410) return MODEL_GONE
  if (status === 429) return RATE_LIMIT
  if (TRANSIENT_STATUSES.has(status)) return TRANSIENT
  // A 400/413/422 is the request's fault only when the provider said what was wrong with it.
  if (REQUEST_STATUSES.has(status) && saysWhy(facts)) return CALLER_FAULT
  return UNKNOWN
}

/** A 5xx judged by its words: a reported rate limit holds the model; otherwise the server's trouble. */
function byServerStatus(facts: Facts): Verdict {
  if (reportsRateLimit(facts)) return RATE_LIMIT
  return TRANSIENT_STATUSES.has(facts.status) ? TRANSIENT : UNKNOWN
}

/** Decides class and scope of a failed answer from its status and what its body said. */
export function decideVerdict(status: number, report: ErrorReport): Verdict {
  const text = `${report.message} ${report.context}`
    .replace(/https?:\/\/\S+/g, ' ')
    .toLowerCase()
    .trim()
  const facts: Facts = { status, text, report }
  const coded = byCode(facts, DECISIVE_CODES)
  if (coded !== null) return coded
  if (status < 400) return UNKNOWN
  // A 5xx is the server's trouble whatever else its words mention ("credit balance service is unavailable").
  if (status >= 500) return byServerStatus(facts)
  // A 401 rejects the key, whatever else its words mention ("User location is not supported").
  if (status === 401) return KEY_CREDENTIAL
  return byWording(facts) ?? byCode(facts, GENERIC_CODES) ?? byStatus(facts)
}
