/** Stable codes of a TranslationError; match on these, never on the message. */
export type TranslationErrorCode = 'translation_unsupported' | 'translation_invalid' | 'upstream_malformed'

/**
 * A translation between formats that cannot be done faithfully: the caller's fault (a 400, no fallback to another
 * key of the provider), or the provider's (`upstream_malformed`: an answer that is not its format's body or event).
 */
export class TranslationError extends Error {
  override readonly name = 'TranslationError'
  constructor (readonly code: TranslationErrorCode, message: string, readonly field?: string) {
    super(message)
  }
}

/** The caller's body is malformed in a way OpenAI would also reject (`translation_invalid`); `field` is the dotted path it is about. */
export function invalid (message: string, field?: string): TranslationError {
  return new TranslationError('translation_invalid', message, field)
}

/** The caller asked for what the upstream's format cannot say, as n > 1 or audio (`translation_unsupported`). */
export function unsupported (message: string, field?: string): TranslationError {
  return new TranslationError('translation_unsupported', message, field)
}
