import { describe, expect, it } from 'vitest'
import { NodeTracker, type RequestRecord } from '@switchboard/history'
import { RoutingLog, type DirectionDecision, type RequestPlan, type TargetSource } from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import type { Served } from '../inference/engine.ts'
import { outcomeOf } from './history.ts'
import { buildRequestRecord, RequestTrack } from './request-record.ts'

const AT = Date.UTC(2026, 11, 1, 12, 0, 0)
const openai = { provider: 'openai', model: 'gpt-4o' }
const azure = { provider: 'azure', model: 'gpt-4o' }
type Attempt = Served['extraFields']['attempts'][number]
const attempt = (provider: string, keyId: string, failure: Attempt['failure_class']): Attempt => ({ provider, model: 'gpt-4o', key_id: keyId, key_name: `${keyId}-name`, status: failure === null ? 200 : 503, failure_class: failure, latency_ms: 9, wait_hint_ms: null })

function servedBy(provider: string, keyId: string, attempts: Attempt[]): Served {
  return {
    success: { ok: true, kind: 'json', status: 200, headers: {}, bytes: Buffer.from('{}'), usage: null, rateLimit: null },
    extraFields: { provider, model: 'gpt-4o', key_id: keyId, key_name: `${keyId}-name`, attempts, request_id: 'id' },
    upstream: { abort() {} },
  }
}

const plan = (fields: Partial<RequestPlan>): RequestPlan => ({ targets: [], primary: 0, pickedBy: 'routing', reason: 'scored', movedOff: null, check: null, session: 'none', ...fields })
const target = (direction: { provider: string; model: string }, source: TargetSource) => ({ ...direction, source, direct: false, firstKeyId: undefined, firstIsCheck: false })

/** A track as the request path leaves it, for each case the per-minute counts tell apart. */
function cases(): { name: string; track: RequestTrack; finished: boolean }[] {
  const make = (name: string, fill: (track: RequestTrack, log: RoutingLog) => void, finished = true) => {
    const track = new RequestTrack(name, 'chat_completions', AT, false, () => AT, false)
    const log = new RoutingLog(false)
    track.asked = { model: 'gpt-4o', fallbacks: [], stream: false, sessionId: null, directKey: false }
    track.log = log
    fill(track, log)
    return { name, track, finished }
  }
  const rerouted: DirectionDecision = { primary: azure, fallbacks: [], reason: 'pinned_rerouted', pinned: openai, appended: [], pruned: [], skipped: [openai], score: 0.9 }
  const kept: DirectionDecision = { primary: openai, fallbacks: [], reason: 'pinned_failed_kept', pinned: openai, appended: [], pruned: [], skipped: [], score: null }
  return [
    make('routing picked, served', (track, log) => {
      log.decision = { primary: openai, fallbacks: [], reason: 'scored', pinned: null, appended: [], pruned: [], skipped: [], score: 1 }
      log.plan = plan({ targets: [target(openai, 'primary')] })
      track.served = servedBy('openai', 'oa-1', [attempt('openai', 'oa-1', null)])
    }),
    make('moved off a failing pinned provider', (track, log) => {
      track.asked = { model: 'openai/gpt-4o', fallbacks: [], stream: false, sessionId: null, directKey: false }
      log.decision = rerouted
      log.plan = plan({ targets: [target(azure, 'primary')], movedOff: { provider: 'openai', reason: 'failed' } })
      track.served = servedBy('azure', 'az-1', [attempt('azure', 'az-1', null)])
    }),
    make('served by a fallback routing added', (track, log) => {
      log.decision = { primary: openai, fallbacks: [azure], reason: 'scored', pinned: null, appended: [azure], pruned: [], skipped: [], score: 1 }
      log.plan = plan({ targets: [target(openai, 'primary'), target(azure, 'added')] })
      track.served = servedBy('azure', 'az-1', [attempt('openai', 'oa-1', 'transient'), attempt('azure', 'az-1', null)])
    }),
    make('kept on a failing pinned provider, failed', (track, log) => {
      track.asked = { model: 'openai/gpt-4o', fallbacks: [], stream: false, sessionId: null, directKey: false }
      log.decision = kept
      log.plan = plan({ targets: [target(openai, 'primary')], pickedBy: 'request', reason: 'pinned_failed_kept' })
      const attempts = [attempt('openai', 'oa-1', 'transient')]
      track.error = new GatewayError('upstream_error', 'Every attempt failed.', { extraFields: { provider: 'openai', model: 'gpt-4o', key_id: 'oa-1', key_name: 'oa-1-name', attempts, request_id: 'id' } })
    }),
    make('a caller fault before routing', (track) => {
      track.asked = null
      track.log = null
      track.error = new GatewayError('invalid_json', 'The request body is not valid JSON')
    }),
    make(
      'the caller went away',
      (track, log) => {
        log.decision = { primary: openai, fallbacks: [], reason: 'scored', pinned: null, appended: [], pruned: [], skipped: [], score: 1 }
        log.plan = plan({ targets: [target(openai, 'primary')] })
        track.served = servedBy('openai', 'oa-1', [attempt('openai', 'oa-1', null)])
      },
      false,
    ),
    make('a stream that broke after it started', (track, log) => {
      log.plan = plan({ targets: [target(openai, 'primary')] })
      track.served = servedBy('openai', 'oa-1', [attempt('openai', 'oa-1', null)])
      track.broke('socket hang up')
    }),
    make('the caller sent its own key', (track, log) => {
      track.asked = { model: 'openai/gpt-4o', fallbacks: [], stream: false, sessionId: null, directKey: true }
      log.decision = { primary: openai, fallbacks: [], reason: 'pinned', pinned: openai, appended: [], pruned: [], skipped: [], score: null }
      log.plan = plan({ targets: [target(openai, 'primary')], pickedBy: 'request', reason: 'pinned' })
      track.served = servedBy('openai', 'direct', [attempt('openai', 'direct', null)])
    }),
  ]
}

/** What the per-minute counts read of a request, stated by its record (the request log's, design.md). */
function fromRecord(record: RequestRecord) {
  const ok = record.failure_class === null && record.served.provider !== null
  return {
    at: AT + record.latency_ms,
    namedProvider: record.routing.picked_by === 'caller' ? record.requested.provider : null,
    model: record.requested.model,
    attempts: record.attempts.map((each) => ({ provider: each.provider, model: each.model, key_id: each.key_id, failure_class: each.failure_class })),
    served: ok ? { provider: record.served.provider, model: record.served.model ?? record.requested.model, key_id: record.served.key_id ?? '' } : null,
    failure: ok ? null : record.failure_class === 'caller_fault' || record.failure_class === 'cancelled' ? 'excluded' : 'upstream',
    routing: { movedOff: record.routing.moved_off !== null, addedFallbackServed: record.routing.added_fallback_served, pinnedKeptFailed: record.routing.pinned_kept_failed },
  }
}

describe('history read off the track', () => {
  it.each(cases().map((each) => [each.name, each] as const))('%s: the same facts as the request record, without building it', (_name, { track, finished }) => {
    const outcome = outcomeOf(track, finished, AT + 30)
    const record = buildRequestRecord(track, { nodeId: 'n', region: 'r', endedAt: AT + 30, finished, secrets: () => [] })
    const { attempts, ...rest } = outcome
    const expected = fromRecord(record)
    expect({ ...rest, attempts: attempts.map((each) => ({ provider: each.provider, model: each.model, key_id: each.key_id, failure_class: each.failure_class })) }).toEqual(expected)
  })

  it('counts each case where the counts say it belongs', () => {
    const tracker = new NodeTracker('n')
    for (const { track, finished } of cases()) tracker.request(outcomeOf(track, finished, AT + 30))
    const rows = Object.fromEntries(tracker.takeCounts(AT + 60).map(({ provider, model, at: _at, ...counts }) => [`${provider}/${model}`, counts]))
    expect(rows).toEqual({
      // routing picked and served; kept on failing openai (named, failed); the stream that broke (failed); the caller's own key (named, served)
      'openai/gpt-4o': { served: 2, failed: 2, redirected: 0, fallbackServed: 0, routingPicked: 2, callerNamed: 2, keptFailing: 1, checks: 0 },
      // moved off openai (routing picked azure); served by the fallback routing added
      'azure/gpt-4o': { served: 2, failed: 0, redirected: 1, fallbackServed: 1, routingPicked: 2, callerNamed: 0, keptFailing: 0, checks: 0 },
    })
  })
})
