/** Errors the config store raises, matched by `code`, never by message. */

/** Stable codes of `ConfigStoreError`. */
export type ConfigStoreErrorCode =
  | 'provider_not_found'
  | 'provider_exists'
  | 'provider_type_unknown'
  | 'key_not_found'
  | 'key_duplicate'
  | 'invalid_field'

/** A config store refusal, naming the field at fault where there is one. */
export class ConfigStoreError extends Error {
  override name = 'ConfigStoreError'

  constructor(
    readonly code: ConfigStoreErrorCode,
    message: string,
    /** Path of the offending field, e.g. `keys[2].id`. */
    readonly field?: string,
  ) {
    super(message)
  }
}
