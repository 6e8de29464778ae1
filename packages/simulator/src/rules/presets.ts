/** Named faults; each produces that provider's real status, headers and body. */
export const FAULT_PRESETS = [
  'invalid_api_key',
  'insufficient_quota',
  'rate_limit',
  'model_not_found',
  'model_access',
  'model_deprecated',
  'region_blocked',
  'server_error',
  'bad_gateway',
  'unavailable',
  'overloaded',
  'context_length_exceeded',
  'bad_request',
  'timeout',
  'reset',
  'stream_cut',
  'stream_error',
  'stream_stall',
  'stream_malformed',
  'stream_no_done',
] as const

/** One of the named faults. */
export type FaultPreset = (typeof FAULT_PRESETS)[number]
