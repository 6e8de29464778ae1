/**
 * The names our spans use: OpenTelemetry's semantic conventions where one exists (HTTP,
 * `gen_ai.*`), `switchboard.*` for the rest. docs/operations.md ("Traces") explains each.
 */
import type { ProviderType } from '@switchboard/providers'

/** Attribute names. */
export const ATTR = {
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  urlPath: 'url.path',
  httpStatus: 'http.response.status_code',
  errorType: 'error.type',
  operation: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  /** The older name of gen_ai.provider.name, still read by many backends. */
  system: 'gen_ai.system',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  surface: 'switchboard.surface',
  requestId: 'switchboard.request_id',
  stream: 'switchboard.stream',
  fallbacks: 'switchboard.fallbacks',
  provider: 'switchboard.provider',
  keyName: 'switchboard.key_name',
  previousKeyName: 'switchboard.previous_key_name',
  failureClass: 'switchboard.failure_class',
  attempt: 'switchboard.attempt',
  attempts: 'switchboard.attempts',
  targetIndex: 'switchboard.target_index',
  check: 'switchboard.check',
  checkOutcome: 'switchboard.check.outcome',
  skipReason: 'switchboard.skip_reason',
  linked: 'switchboard.linked_holds',
  linkKind: 'switchboard.link',
  holdReason: 'switchboard.hold.reason',
  holdRung: 'switchboard.hold.rung',
  holdWaitMs: 'switchboard.hold.wait_ms',
  deadline: 'switchboard.deadline',
  deadlineMs: 'switchboard.deadline_ms',
  abandoned: 'switchboard.abandoned',
  requestBody: 'switchboard.request.body',
  responseBody: 'switchboard.response.body',
} as const

/** Event names. */
export const EVENT = {
  keySkipped: 'switchboard.key.skipped',
  keyRotated: 'switchboard.key.rotated',
  fallback: 'switchboard.fallback',
  holdPlaced: 'switchboard.hold.placed',
  deadlineHit: 'switchboard.deadline.hit',
  check: 'switchboard.check',
} as const

/** `gen_ai.provider.name` of each adapter type (the conventions' well-known values). */
const PROVIDER_NAMES: Record<ProviderType, string> = {
  openai: 'openai',
  azure: 'azure.ai.openai',
  anthropic: 'anthropic',
  bedrock: 'aws.bedrock',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
}

export function providerNameOf(type: ProviderType): string {
  return PROVIDER_NAMES[type] ?? type
}

/** `gen_ai.operation.name` of a surface. */
export function operationOf(surface: string): string {
  if (surface === 'embeddings') return 'embeddings'
  if (surface === 'messages_count_tokens') return 'count_tokens'
  return 'chat'
}

/** Each first part's last span name (`${first} ${second}`): built again only when the second part changes (a node's routes and models repeat). */
const lastNames = new Map<string, { second: string; name: string }>()
export function spanName(first: string, second: string): string {
  const last = lastNames.get(first)
  if (last !== undefined && last.second === second) return last.name
  const name = `${first} ${second}`
  if (lastNames.size < 64 || last !== undefined) lastNames.set(first, { second, name })
  return name
}
