/** Stable codes of a TranslationError; match on these, never on the message. */
export type TranslationErrorCode =
  /** The caller asked for something Anthropic cannot do (n > 1, logprobs, audio, ...). */
  | 'translation_unsupported'
  /** The caller's body is malformed in a way OpenAI would also reject. */
  | 'translation_invalid'
  /** Anthropic answered with something that is not a Messages API body or event. */
  | 'upstream_malformed'

/**
 * An OpenAI <-> Anthropic translation that cannot be done faithfully.
 * The first two codes are the caller's fault (answer 400, do not fall back to
 * another key of the same provider); `upstream_malformed` is the provider's.
 */
export class TranslationError extends Error {
  override readonly name = 'TranslationError'
  readonly code: TranslationErrorCode
  /** The OpenAI field (dotted path) the problem is about, when there is one. */
  readonly field: string | undefined

  constructor (code: TranslationErrorCode, message: string, field?: string) {
    super(message)
    this.code = code
    this.field = field
  }
}

/**
 * An `error` event Anthropic sent in the middle of a stream (e.g. `overloaded_error`).
 * The HTTP status was already 200, so this is the only place the failure shows.
 */
export class AnthropicStreamError extends Error {
  override readonly name = 'AnthropicStreamError'
  readonly code = 'anthropic_stream_error'
  /** Anthropic's `error.type`, e.g. `overloaded_error`, `api_error`. */
  readonly errorType: string
  /** Anthropic's `error.message`, word for word. */
  readonly providerMessage: string

  constructor (errorType: string, providerMessage: string) {
    super(`Anthropic stream failed with ${errorType}: ${providerMessage}`)
    this.errorType = errorType
    this.providerMessage = providerMessage
  }
}

/** The caller's body is malformed (`translation_invalid`); `field` is the dotted path it is about. */
export function invalid (message: string, field?: string): TranslationError {
  return new TranslationError('translation_invalid', message, field)
}

/** The caller asked for what the upstream's format cannot say (`translation_unsupported`). */
export function unsupported (message: string, field?: string): TranslationError {
  return new TranslationError('translation_unsupported', message, field)
}
