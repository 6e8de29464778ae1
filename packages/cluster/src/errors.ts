/** Errors the cluster raises, matched by `code`, never by message. */

/** Every stable code of `ClusterError`; the README's table lists the same. */
export const clusterErrorCodes = [
  'invalid_init',
  'listen_failed',
  'topic_exists',
  'invalid_topic',
  'message_invalid',
  'message_oversized',
  'queue_full',
  'stopped',
  'peer_unreachable',
  'request_timeout',
  'request_failed',
  'response_invalid',
  'remote_error',
] as const

/** Stable codes of `ClusterError`. */
export type ClusterErrorCode = (typeof clusterErrorCodes)[number]

/** A cluster refusal or failure; `retryable` says whether trying again later may succeed. */
export class ClusterError extends Error {
  override name = 'ClusterError'
  readonly code: ClusterErrorCode
  readonly retryable: boolean

  constructor(code: ClusterErrorCode, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.retryable = options.retryable ?? false
  }
}
