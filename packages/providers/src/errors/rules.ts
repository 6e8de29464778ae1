/**
 * The rules that turn an error report into a failure class and scope.
 *
 * Three passes, most trusted first (reference: adaptive-load-balancing, "What holds a key"):
 * 1. the provider's own code or type, when that code decides the class by itself;
 * 2. the provider's wording, for answers whose code is generic (`invalid_request_error`,
 *    `INVALID_ARGUMENT`, `ValidationException`) or missing;
 * 3. the HTTP status.
 * `caller_fault` is kept for answers in which the provider says the request itself cannot be
 * served as written (malformed, too long, refused content): it stops the request with no retry
 * and no fallback, so a missing model, a shut account, a wrong upstream path or a wordless 4xx
 * is never one.
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
const CONTEXT_LENGTH = verdict('context_length')
const UNKNOWN = verdict('unknown')

// Wording, matched against lower-cased text. Each names what the provider said, not how we react.
const SAYS_CREDENTIAL_BAD =
  /incorrect api key|invalid api key|api key not valid|api key expired|invalid x-api-key|invalid authentication|authentication credentials|authentication failed|invalid subscription key|security token included in the request is (?:invalid|expired)|no auth credentials|reported as leaked|api key (?:has been|was) (?:revoked|disabled|deleted)|unregistered callers|api key is valid/
/** The account or organization behind the key is shut off: every request on the key fails, whatever it asks. */
const SAYS_ACCOUNT_SHUT =
  /account (?:was|has been|is) (?:flagged|terminated|deactivated|suspended|disabled|banned)|(?:organization|account) has been restricted|your resource has been (?:temporarily )?blocked|has not been used in project|api has not been enabled|is disabled\. enable it/
const SAYS_REGION_BLOCKED =
  /country, region,? or territory (?:is )?not supported|unsupported_country|unsupported countr(?:y|ies)|user location is not supported|not available in your (?:country|region)|unsupported (?:region|location)/
const SAYS_ACCOUNT_OUT_OF_MONEY =
  /credit balance|insufficient (?:credits|balance|funds)|requires more credits|can only afford|prepa(?:y|id|yment) credits|billing (?:hard )?limit|spend(?:ing)? (?:limit|cap)|api usage limits|key limit exceeded|account is not active|billing to be enabled|billing (?:is )?(?:not enabled|disabled)/
const SAYS_QUOTA_EXCEEDED = /exceeded your current quota/
/**
 * Azure's (and API Management's) 403 "Out of call volume quota ... Quota will be replenished in
 * d.hh:mm:ss": the resource's call quota is spent until then. Quota, not a refused key: the key is
 * fine, and waiting is the cure, not replacing it.
 */
const SAYS_CALL_VOLUME_QUOTA = /out of call volume quota/
/** A quota that refills once a day (Gemini's per-model daily quotas), not within a rate-limit window. */
const SAYS_PER_DAY = /per.?day|daily/
const SAYS_RATE_LIMITED = /rate.?limit|too many requests|throttl|slow down/
/** The provider's own capacity, not the key's limits (Azure's 429 "experiencing high demand ... during peak load"). */
const SAYS_OVERLOADED = /overloaded|temporarily unavailable|experiencing high demand/
/**
 * A content gate in front of one model or key (OpenRouter's moderation for the models that require
 * it, a per-key guardrail, Mistral's guardrail 403): it judges this request's content, not its
 * form, and another model or key may serve it.
 */
const SAYS_CONTENT_GATE = /guardrail|input was flagged|requires moderation|moderation:|request blocked/
/** The request is longer than the model's context window (another model or provider may hold it). */
const SAYS_CONTEXT_TOO_LONG =
  /maximum context length|context length|context window|context limit|prompt is too long|input is too long|too many input tokens|input token count .*exceeds|exceeds the maximum number of tokens|reduce the length of the (?:messages|prompt|input)|size limit exceeded by \d+ tokens|shorter or fewer inputs/
/** The provider says the request itself cannot be served as written: its content, size or form. */
const SAYS_REQUEST_REFUSED =
  /content (?:management )?polic|safety system|size limit exceeded/
const SAYS_NO_MODEL_ACCESS =
  /(?:does|do) not have access to (?:the )?model|(?:does|do) not have access to it|don't have access to the model|not allowed to (?:sample from|use|access) (?:this|the|publisher) model|not authorized to (?:use|access) (?:this|the) model|not have permission to use|not servable in region|on-demand throughput isn.?t supported|model identifier is invalid|requires terms acceptance|blocked at the organization level|use case details have not been submitted|no endpoints found|no allowed providers/
const SAYS_MODEL_RETIRED =
  /model\b.*\b(?:has been|was|is now|is) (?:deprecated|decommissioned|retired|discontinued|removed)|end of (?:its )?life|model\b.*\bno longer (?:supported|available)|model\b.*\bis in deprecation/
/** A model the key cannot reach: a typo, a model not enabled for the key, or one this provider does not serve. */
const SAYS_MODEL_MISSING =
  /model\b.*\bdoes not exist|model\b.*\bnot found|is not found for api version|not a valid model|invalid model|unknown model|could not resolve the foundation model|model\b.*\bis not available|is not available\. please use/
const MENTIONS_MODEL = /\bmodels?\b/

/**
 * Gemini/Vertex RESOURCE_EXHAUSTED covers rate limits, daily per-model quotas and prepaid credit
 * alike: a rate limit unless it names money (billing, a spending cap, prepaid credit) or a daily quota.
 */
function resourceExhausted(facts: Facts): Verdict {
  if (facts.status === 402 || SAYS_ACCOUNT_OUT_OF_MONEY.test(facts.text)) return KEY_QUOTA
  // A daily quota per project and model does not refill within a rate-limit window: hold the
  // model as out of quota. The project's other models have their own quotas, so not the key.
  const violations = facts.report.quotaViolations
  if (violations.some((violation) => SAYS_PER_DAY.test(violation.toLowerCase())) || SAYS_PER_DAY.test(facts.text)) return MODEL_QUOTA
  return RATE_LIMIT
}

/**
 * OpenAI/Groq/Mistral `model_not_found`: retired models, typos and models this key may not use.
 * Only words saying the model was retired make it model_gone; anything else is this key's
 * access to it (the model may exist for another key, region or provider).
 */
function modelNotFound(facts: Facts): Verdict {
  return SAYS_MODEL_RETIRED.test(facts.text) ? MODEL_GONE : MODEL_ACCESS
}

/**
 * Not-found codes that are not about models alone (Anthropic `not_found_error`, Google
 * `NOT_FOUND`, Bedrock `ResourceNotFoundException`, OpenRouter `not_found`): about the model
 * when the words say so, else a resource we asked for wrongly, which says nothing about the key.
 */
function notFound(facts: Facts): Verdict {
  if (SAYS_MODEL_RETIRED.test(facts.text)) return MODEL_GONE
  if (SAYS_NO_MODEL_ACCESS.test(facts.text) || SAYS_MODEL_MISSING.test(facts.text) || MENTIONS_MODEL.test(facts.text)) return MODEL_ACCESS
  return UNKNOWN
}

/** Bedrock AccessDeniedException: a rejected key when its words say so, else no access to the model. */
function accessDenied(facts: Facts): Verdict {
  return SAYS_CREDENTIAL_BAD.test(facts.text) ? KEY_CREDENTIAL : MODEL_ACCESS
}

/** A rate-limit code whose words name spent money (Anthropic's monthly spend limit as a 429 rate_limit_error). */
function rateLimited(facts: Facts): Verdict {
  return SAYS_ACCOUNT_OUT_OF_MONEY.test(facts.text) ? KEY_QUOTA : RATE_LIMIT
}

/**
 * A content-policy code: the provider refuses this request's content (caller_fault), unless it is
 * a 403 gate in front of one model or key (OpenRouter's moderation), which another may pass.
 */
function contentPolicy(facts: Facts): Verdict {
  return facts.status === 403 || SAYS_CONTENT_GATE.test(facts.text) ? UNKNOWN : CALLER_FAULT
}

/** Server-side codes: a 5xx that reports a rate limit holds the model like a 429. */
function serverSide(facts: Facts): Verdict {
  return SAYS_RATE_LIMITED.test(facts.text) && !SAYS_OVERLOADED.test(facts.text) ? RATE_LIMIT : TRANSIENT
}

type Rule = Verdict | ((facts: Facts) => Verdict)

/** A code table from rows of a rule and the (lower-cased) codes it decides. */
function codeTable<R>(rows: [R, ...string[]][]): ReadonlyMap<string, R> {
  return new Map(rows.flatMap(([rule, ...codes]) => codes.map((code) => [code, rule] as const)))
}

/** Codes that decide the class on their own, lower-cased. */
const DECISIVE_CODES = codeTable<Rule>([
  // A key the provider does not accept fails for every model. The account behind the key is shut:
  // OpenAI `access_terminated`, Groq `organization_restricted`. Google's SERVICE_DISABLED: the API
  // is off for the key's project, so no model can answer it.
  [KEY_CREDENTIAL, 'invalid_api_key', 'authentication_error', 'api_key_invalid', 'unauthenticated', 'account_deactivated',
    'unrecognizedclientexception', 'invalidsignatureexception', 'expiredtokenexception', 'invalidclienttokenid',
    'access_token_expired', 'credentials_missing', 'consumer_suspended', 'api_key_service_blocked',
    'access_terminated', 'organization_restricted', 'service_disabled'],
  // Account-level money: the spec holds the whole key (a 402, insufficient_quota, credit balance).
  // Groq `blocked_api_access`: the organization's API access is blocked until its billing is settled.
  [KEY_QUOTA, 'insufficient_quota', 'billing_error', 'credit_balance_exhausted', 'billing_hard_limit_reached',
    'enforced_spend_limit_reached', 'organization_spend_limit_exceeded', 'blocked_api_access'],
  [resourceExhausted, 'resource_exhausted'],
  [modelNotFound, 'model_not_found'],
  [notFound, 'not_found_error', 'not_found', 'resourcenotfoundexception'],
  // Azure: the deployment is this key's resource's name for the model. It may be minutes old
  // ("created within the last 5 minutes") or deleted, and the model still exists elsewhere,
  // so it is this key's access to the model that fails: model_access, its shorter ladder.
  // Also a model this key cannot use here: Mistral `unknown_model`/`invalid_model`, Groq terms not
  // accepted or the model blocked for the organization, Bedrock's use-case form not filled.
  [MODEL_ACCESS, 'deploymentnotfound', 'iam_permission_denied', 'unknown_model', 'invalid_model', 'model_terms_required',
    'model_permission_blocked_org', 'ftuformnotfilled'],
  [accessDenied, 'accessdeniedexception'],
  [MODEL_GONE, 'model_decommissioned', 'model_deprecated', 'servicemodeldeprecating'],
  [REGION_BLOCKED, 'unsupported_country_region_territory'],
  [rateLimited, 'rate_limit_exceeded', 'rate_limit_error', 'rate_limited', 'throttlingexception', 'too_many_requests', 'slow_down'],
  // Bedrock: "Your request exceeds the service quota for your account. You can resubmit your
  // request later." A per-minute token/request quota that refills: a rate limit, not spent money.
  [RATE_LIMIT, 'servicequotaexceededexception'],
  // ModelNotReadyException arrives as a 429, yet it is about the model warming up, not the key.
  [TRANSIENT, 'overloaded_error', 'modelnotreadyexception'],
  [serverSide, 'serviceunavailableexception', 'internalserverexception', 'modeltimeoutexception', 'modelstreamerrorexception',
    'server_error', 'api_error', 'unavailable', 'internal', 'deadline_exceeded'],
  [contentPolicy, 'content_policy_violation', 'content_filter', 'responsibleaipolicyviolation'],
  [CONTEXT_LENGTH, 'context_length_exceeded'],
  [CALLER_FAULT, 'request_too_large', 'invalid_encrypted_content'],
])

/**
 * A permission refusal that names a model or resource: this key may not use it. One that names
 * neither (Google's "Access denied by organization restriction") refuses the key, like a bare 403.
 */
function permissionDenied(facts: Facts): Verdict {
  return MENTIONS_MODEL.test(facts.text) || /\bresource\b/.test(facts.text) ? MODEL_ACCESS : byStatus(facts)
}

/**
 * Codes that name a kind of refusal without saying what was refused: they decide only when
 * the wording said nothing more specific. Anthropic `permission_error`, Groq
 * `permissions_error`, Google `PERMISSION_DENIED` on a model: this key may not use the model.
 * Google `FAILED_PRECONDITION`: the project is not set up for this model (not enabled, not
 * servable in the region), never the request's form.
 */
const GENERIC_CODES = codeTable<Rule>([
  [permissionDenied, 'permission_error', 'permissions_error', 'permission_denied'],
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
  if (facts.report.primaryCode !== null) return true
  return facts.text !== '' && !HTML_PAGE.test(facts.text)
}

function byStatus(facts: Facts): Verdict {
  const { status, text } = facts
  if (status === 402) return KEY_QUOTA
  // A 403 that names nothing more specific refuses the key (a network rule, a blocked resource).
  if (status === 403) return KEY_CREDENTIAL
  // A 404 naming the request field it could not resolve is the request's; one naming a model is
  // that model out of this key's reach; any other 404 (no body, an HTML page, "Invalid URL") is
  // a wrong upstream path, which says nothing about the request or the key.
  if (status === 404) {
    if (facts.report.param !== null) return CALLER_FAULT
    return MENTIONS_MODEL.test(text) ? MODEL_ACCESS : UNKNOWN
  }
  if (status === 410) return MODEL_GONE
  if (status === 429) return RATE_LIMIT
  if (TRANSIENT_STATUSES.has(status)) return TRANSIENT
  // A 400/413/422 is the request's fault only when the provider said what was wrong with it.
  // A wordless one (or a 405, 414, 415) is as likely our path or proxy as the caller's request.
  if (REQUEST_STATUSES.has(status) && saysWhy(facts)) return CALLER_FAULT
  return UNKNOWN
}

/** A 5xx judged by its words: a reported rate limit holds the model; otherwise the server's trouble. */
function byServerStatus(facts: Facts): Verdict {
  if (SAYS_RATE_LIMITED.test(facts.text) && !SAYS_OVERLOADED.test(facts.text)) return RATE_LIMIT
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
