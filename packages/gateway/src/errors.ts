/**
 * Errors the gateway answers with: a stable `code`, an HTTP status and an OpenAI-style `type`.
 * The table of codes is in docs/api.md ("Error codes"); errors.test.ts keeps the two in step.
 */
import { isUnreachable } from '@switchboard/store'

/** OpenAI's error `type` values we use. */
export type ErrorType = 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error' | 'rate_limit_error' | 'upstream_error' | 'server_error'

/** Every code the gateway itself produces, with its status and type. */
export const ERROR_CODES = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unknown_provider: { status: 400, type: 'invalid_request_error' },
  model_not_served: { status: 404, type: 'not_found_error' },
  surface_not_served: { status: 404, type: 'not_found_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'not_found_error' },
  provider_not_found: { status: 404, type: 'not_found_error' },
  log_not_found: { status: 404, type: 'not_found_error' },
  provider_exists: { status: 409, type: 'invalid_request_error' },
  admin_unauthorized: { status: 401, type: 'authentication_error' },
  admin_forbidden: { status: 403, type: 'permission_error' },
  origin_forbidden: { status: 403, type: 'permission_error' },
  gateway_key_required: { status: 401, type: 'authentication_error' },
  gateway_key_invalid: { status: 401, type: 'authentication_error' },
  gateway_key_forbidden: { status: 403, type: 'permission_error' },
  gateway_key_rate_limited: { status: 429, type: 'rate_limit_error' },
  gateway_key_not_found: { status: 404, type: 'not_found_error' },
  gateway_key_exists: { status: 409, type: 'invalid_request_error' },
  store_unavailable: { status: 503, type: 'server_error' },
  gateway_starting: { status: 503, type: 'server_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  upstream_credentials_exhausted: { status: 502, type: 'upstream_error' },
  upstream_rate_limited: { status: 429, type: 'rate_limit_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
  upstream_unavailable: { status: 502, type: 'upstream_error' },
  upstream_error: { status: 502, type: 'upstream_error' },
  upstream_rejected_request: { status: 400, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  direct_key_rejected: { status: 401, type: 'authentication_error' },
  direct_keys_disabled: { status: 400, type: 'invalid_request_error' },
  client_closed_request: { status: 499, type: 'invalid_request_error' },
  internal_error: { status: 500, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>

export type ErrorCode = keyof typeof ERROR_CODES

/** An error answered to the caller. `status` may differ from the code's default (a caller fault keeps the upstream's 4xx). */
export class GatewayError extends Error {
  readonly status: number
  readonly type: ErrorType
  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { status?: number; param?: string | null; extraFields?: object; retryAfterSeconds?: number } = {},
  ) {
    super(message)
    this.name = 'GatewayError'
    this.status = options.status ?? ERROR_CODES[code].status
    this.type = ERROR_CODES[code].type
    this.param = options.param ?? null
    this.extraFields = options.extraFields
    this.retryAfterSeconds = options.retryAfterSeconds ?? null
  }
  /** Seconds for a `retry-after` header (a rate limit the caller should wait out), or null. */
  readonly retryAfterSeconds: number | null
  readonly param: string | null
  extraFields: object | undefined

  /** The OpenAI-style body. */
  toJSON(): Record<string, unknown> {
    const body: Record<string, unknown> = { error: { message: this.message, type: this.type, code: this.code, param: this.param } }
    if (this.extraFields) body.extra_fields = this.extraFields
    return body
  }
}

/**
 * Runs a read or write of Postgres for the admin API: unreachable is a 503 `store_unavailable`
 * saying `unavailable`; a query `Refused` (the store's own check) is a 400 naming its parameter.
 */
export async function fromStore<Result>(call: () => Promise<Result>, unavailable: string, Refused?: new (param: string, message: string) => Error & { param: string }): Promise<Result> {
  try {
    return await call()
  } catch (error) {
    if (Refused !== undefined && error instanceof Refused) throw new GatewayError('invalid_request', error.message, { param: error.param })
    if (isUnreachable(error)) throw new GatewayError('store_unavailable', unavailable)
    throw error
  }
}

/** The error a caller gets: a GatewayError as it is; anything else logged and answered as a 500 that points at the log. */
export function asGatewayError(error: unknown, logger: { error(details: object, message: string): void }): GatewayError {
  if (error instanceof GatewayError) return error
  logger.error({ err: error }, 'unhandled error')
  return new GatewayError('internal_error', 'The gateway failed to handle this request; see the node log.')
}
