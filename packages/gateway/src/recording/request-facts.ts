/** The facts of a finished request both listeners state (history off the track, the request log's record), so they cannot drift apart. */
import type { FailureClass } from '@switchboard/routing'
import type { Served } from '../inference/engine.ts'
import type { RequestTrack } from './request-record.ts'

const CALLER_FAULT_CODES = new Set(['invalid_json', 'invalid_request', 'unknown_provider', 'model_not_served', 'request_too_large', 'unsupported_media_type', 'method_not_allowed', 'upstream_rejected_request'])

/** What the engine left with the answer or the error: provider, model and key used, and the attempts. */
export function extraOf(track: RequestTrack): Served['extraFields'] | null {
  return (track.served?.extraFields ?? (track.error?.extraFields as Served['extraFields'] | undefined)) ?? null
}

/** The provider the request named, as routing read it (null when it named none). */
export function requestedProvider(track: RequestTrack): string | null {
  return track.log?.decision?.pinned?.provider ?? null
}

/** The model the request asked for, as routing read it ('' when the request failed before naming one). */
export function requestedModel(track: RequestTrack): string {
  const decision = track.log?.decision ?? null
  return decision?.pinned?.model ?? decision?.primary?.model ?? track.asked?.model ?? ''
}

/** How a finished request failed (`lastFailure`: the last attempt's class); null when answered in full. */
export function failureClassOf(track: RequestTrack, finished: boolean, lastFailure: FailureClass | null | undefined): FailureClass | null {
  const error = track.error
  if (error !== null) {
    if (error.code === 'client_closed_request') return 'cancelled'
    if (CALLER_FAULT_CODES.has(error.code)) return 'caller_fault'
    if (lastFailure) return lastFailure
    return error.code === 'upstream_timeout' ? 'timeout' : 'unknown'
  }
  if (track.streamError !== null) return 'transient'
  return finished ? null : 'cancelled'
}

/** Whether the caller picked the provider (`routing.picked_by`): the plan says (routing sets it with its decision), else a `provider/model` counts as the caller's pick. */
export function pickedByCaller(track: RequestTrack): boolean {
  const asked = track.asked
  if (asked?.directKey === true) return true
  const plan = track.log?.plan ?? null
  return plan !== null ? plan.pickedBy === 'request' : (asked?.model.includes('/') ?? false)
}

/** The provider routing moved the request off (it was failing), or null. */
export function movedOffOf(track: RequestTrack): string | null {
  return track.log?.plan?.movedOff?.provider ?? null
}

/** Whether the direction that served the request was a fallback routing added (not the caller's, not the primary). */
export function addedFallbackServed(track: RequestTrack): boolean {
  // "Served" when no error came back, whatever the stream did after.
  if (track.error !== null || track.served === null) return false
  const { provider, model } = track.served.extraFields
  return (track.log?.plan?.targets ?? []).some((target) => target.source === 'added' && target.provider === provider && target.model === model)
}

/** Pinned to a failing provider and kept there because re-routing was off. */
export function pinnedKeptFailed(track: RequestTrack): boolean {
  return track.log?.decision?.reason === 'pinned_failed_kept'
}

/** Whether session affinity kept the request on its session's key (planned first, and it served); null without a session. */
export function sessionKeptOf(track: RequestTrack): boolean | null {
  const session = track.log?.session ?? null
  if (session === null || session === 'none') return null
  if (session !== 'kept') return false
  const first = track.log?.plan?.targets[0]
  const extra = track.error === null ? extraOf(track) : null
  if (first === undefined || first.firstKeyId === undefined || extra === null) return false
  return extra.provider === first.provider && extra.key_id === first.firstKeyId
}
