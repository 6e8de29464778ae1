/**
 * Feeds the history recorder (issue 14) from what the gateway already sees: holds, the routes
 * after each recompute, finished requests, config and settings changes. It records and decides
 * nothing. Also the leader's daily retention and the writers' /metrics.
 */
import type { Logger } from 'pino'
import { countsAgainstKey, type AdaptiveBalancer, type HoldEntry, type LoadBalancerSettings } from '@switchboard/routing'
import type { ConfigStore, ConfigStoreEvent, DatabasePool } from '@switchboard/store'
import { createHistoryQueries, defaultHistorySettings, keyEntity, readHistorySettings, runRetention, startHistoryRecorder, writeHistorySettings, type HistoryQueries, type HistoryRecorder, type HistorySettings, type RequestOutcome } from '@switchboard/history'
import { scrapedCounter, scrapedGauge, type Metrics } from '../observability/metrics.ts'
import type { Dispatcher } from '../dispatch/dispatcher.ts'
import { addedFallbackServed, extraOf, failureClassOf, movedOffOf, pickedByCaller, pinnedKeptFailed, requestedModel, requestedProvider } from './request-facts.ts'
import type { RequestRecorder, RequestTrack } from './request-record.ts'
import type { HistoryForward } from '../workers/protocol.ts'
import { both } from '../workers/sharing.ts'

/** A pool or a transaction's client: history's settings are written inside the switches' transaction. */
type Queryable = Parameters<typeof readHistorySettings>[0]

export interface HistoryRecordingComponents {
  pool: DatabasePool
  store: ConfigStore
  balancer: AdaptiveBalancer
  /** The per-request tracks (issue 15): history's per-minute counts listen to them, lightly (no record built). */
  recorder: RequestRecorder
  /** A configured key's name, for the history queries. */
  keyName(provider: string, keyId: string): string | undefined
  settings: () => LoadBalancerSettings
  metrics: Metrics
  logger: Logger
  now: () => number
  /** True on the node that runs the daily retention (a regional leader; Postgres keeps it to once a day). */
  isLeader: () => Promise<boolean>
  /** On a worker that does not write history (only the fleet worker does), where its own events go instead. */
  forward?: (event: HistoryForward) => void
}

export interface HistoryRecordingInit {
  nodeId: string
  region: string
  /** config.json's `load_balancer_config.history_*` values (API-saved values win). */
  configured: Partial<HistorySettings>
  env: NodeJS.ProcessEnv
}

/** History wiring of one node. */
export type HistoryRecording = Awaited<ReturnType<typeof startHistoryRecording>>

/** Starts recording history on this node. */
export async function startHistoryRecording(components: HistoryRecordingComponents, init: HistoryRecordingInit) {
  const { pool, store, balancer, logger, now } = components
  let settings: HistorySettings = { ...defaultHistorySettings }
  try {
    // Writes only the values config.json sets (none: a read).
    settings = await writeHistorySettings(pool, init.configured, 'config')
  } catch (error) {
    logger.warn({ err: error }, 'could not read the history settings; using the defaults')
  }
  const envMs = (name: string) => {
    const value = Number(init.env[name])
    return Number.isFinite(value) && value > 0 ? value : undefined
  }
  const snapshotMs = envMs('SWITCHBOARD_HISTORY_SNAPSHOT_MS') ?? 60_000

  const forward = components.forward
  const recorder = forward
    ? forwardingRecorder(forward)
    : await startHistoryRecorder(
        { pool, now, enabled: () => settings.history_enabled, log: (line) => logger.warn(line) },
        { nodeId: init.nodeId, region: init.region, snapshotIntervalMs: snapshotMs, routes: () => balancer.routes() },
      )
  const queries = createHistoryQueries(
    { pool, now, keyName: components.keyName, settings: () => ({ ...components.settings(), ...settings }) },
    { lostAfterMs: envMs('SWITCHBOARD_HISTORY_LOST_MS') ?? 3 * snapshotMs, waitingAfterMs: envMs('SWITCHBOARD_HISTORY_WAITING_MS') ?? 120_000 },
  )

  // Config-store changes made on this node (each change is recorded once, where it was made).
  const recordChange = (change: ConfigStoreEvent, origin?: 'config') => {
    const from = origin === undefined ? {} : { origin }
    switch (change.type) {
      case 'key:changed':
      case 'key:deleted': {
        const { provider, id, name } = change.detail
        const edited = change.type === 'key:changed' ? { created: change.detail.created, fields: change.detail.fields } : {}
        recorder.record({ kind: change.type === 'key:changed' ? 'key:edited' : 'key:deleted', entity: keyEntity(provider, id), provider, model: null, keyId: id, detail: { key_name: name, ...edited, ...from } })
        return
      }
      case 'provider:changed':
      case 'provider:deleted': {
        const provider = change.detail.provider
        const edited = change.type === 'provider:changed' ? { created: change.detail.created, fields: change.detail.fields } : {}
        recorder.record({ kind: change.type === 'provider:changed' ? 'provider:edited' : 'provider:deleted', entity: `provider:${provider}`, provider, model: null, keyId: null, detail: { ...edited, ...from } })
        return
      }
      case 'settings:changed': {
        // Before and after as the store read them in the change's transaction: this node's view may be behind.
        const detail = change.detail
        recorder.record({ kind: 'settings:changed', entity: 'settings', provider: null, model: null, keyId: null, detail: { before: { ...detail.before, ...settings }, after: { ...detail.load_balancer_config, ...settings }, fields: detail.fields, origin: detail.origin } })
      }
    }
  }
  // Every worker hears the store's changes; the one that writes history records them.
  const offStore = forward ? () => {} : store.on((change) => recordChange(change))

  // Settings saved on another node reach this one through Postgres.
  const settingsTimer = setInterval(() => {
    readHistorySettings(pool).then(
      (read) => {
        settings = read
        listen()
      },
      () => {},
    )
  }, 15_000)
  settingsTimer.unref()

  // The daily retention: every hour the leader asks; Postgres lets it run once a day.
  const retention = async () => {
    if (!(await components.isLeader())) return
    const ran = await runRetention(pool, { now: now(), retentionDays: settings.history_retention_days })
    if (ran !== null && ran.dropped.length > 0) logger.info({ dropped: ran.dropped, episodes: ran.episodes }, `history retention: dropped ${ran.dropped.length} day partitions`)
  }
  const retentionTimer = setInterval(() => void retention().catch((error: unknown) => logger.warn({ err: error }, 'history retention failed')), envMs('SWITCHBOARD_HISTORY_RETENTION_CHECK_MS') ?? 3_600_000)
  retentionTimer.unref()

  registerMetrics(components.metrics, recorder)
  // History reads its counts off each request's track (no record built), listening only while it is on.
  let offRecords: (() => void) | null = null
  const listen = () => {
    if (settings.history_enabled && offRecords === null) offRecords = components.recorder.onTrack((track, finished, endedAt) => recorder.request(outcomeOf(track, finished, endedAt)))
    else if (!settings.history_enabled && offRecords !== null) {
      offRecords()
      offRecords = null
    }
  }
  listen()

  return {
    queries,
    settings: (): HistorySettings => ({ ...settings }),
    /** History's share of a settings save (issue 37, item 6): `write` in the switches' transaction, `saved` once it committed. */
    settingsWrite(values: Partial<HistorySettings>) {
      let previous: HistorySettings | undefined
      let next: HistorySettings | undefined
      return {
        async write(client: Queryable) {
          // Before as Postgres has it (another node may have changed it since this one last read).
          previous = await readHistorySettings(client)
          next = await writeHistorySettings(client, values, 'api')
        },
        saved(): HistorySettings {
          if (previous === undefined || next === undefined) throw new Error('history settings saved before they were written')
          settings = next
          listen()
          const before = { ...components.settings(), ...previous }
          const after = { ...components.settings(), ...settings }
          // Recorded only when something changed, naming only what did (a PUT that resends a value changes nothing).
          const fields = (['history_enabled', 'history_retention_days'] as const).filter((field) => before[field] !== after[field])
          if (fields.length > 0) recorder.record({ kind: 'settings:changed', entity: 'settings', provider: null, model: null, keyId: null, detail: { before, after, fields, origin: 'api' } })
          return { ...settings }
        },
      }
    },
    /** The changes config.json made at this node's boot, before history listened (the store applies each once in the fleet). */
    configImported: (changes: readonly ConfigStoreEvent[]) => changes.forEach((change) => recordChange(change, 'config')),
    holds: (entries: readonly HoldEntry[], origin: 'local' | 'peer') => recorder.holds(entries, origin),
    recomputed: () => recorder.routes(balancer.routes()),
    /** The dispatcher as the fleet should see it: merges from peers are recorded too. */
    observeMerges: (dispatcher: Dispatcher): Dispatcher => ({ ...dispatcher, merged: both(dispatcher.merged, (entries) => recorder.holds(entries, 'peer')) }),
    /** Events another worker of this node forwarded (see `forward`). */
    forwarded(events: readonly HistoryForward[]) {
      for (const forwarded of events) {
        if (forwarded.type === 'holds') recorder.holds(forwarded.entries as Parameters<HistoryRecorder['holds']>[0], 'local')
        else if (forwarded.type === 'request') recorder.request(forwarded.outcome as RequestOutcome)
        else recorder.record(forwarded.event as Parameters<HistoryRecorder['record']>[0])
      }
    },
    async close(): Promise<void> {
      offRecords?.()
      clearInterval(settingsTimer)
      clearInterval(retentionTimer)
      offStore()
      await recorder.close()
    },
  }
}

/** How a request went, for the per-minute counts: the request record's facts, read off the track without building it. */
export function outcomeOf(track: RequestTrack, finished: boolean, endedAt: number): RequestOutcome {
  const extra = extraOf(track)
  const attempts = extra?.attempts ?? NO_ATTEMPTS
  const failureClass = failureClassOf(track, finished, attempts[attempts.length - 1]?.failure_class)
  const model = requestedModel(track)
  const servedProvider = extra?.provider ?? null
  const ok = failureClass === null && servedProvider !== null
  return {
    at: Math.max(track.startedAt, endedAt),
    namedProvider: pickedByCaller(track) ? requestedProvider(track) : null,
    model,
    attempts,
    served: ok ? { provider: servedProvider, model: extra!.model ?? model, key_id: extra!.key_id ?? '' } : null,
    failure: ok ? null : failureClass !== null && !countsAgainstKey(failureClass) ? 'excluded' : 'upstream',
    routing: {
      movedOff: movedOffOf(track) !== null,
      addedFallbackServed: addedFallbackServed(track),
      pinnedKeptFailed: pinnedKeptFailed(track),
    },
  }
}

const NO_ATTEMPTS: readonly never[] = Object.freeze([])

/** The recorder of a worker that does not write history: its own events go to the worker that does. */
function forwardingRecorder(forward: (event: HistoryForward) => void): HistoryRecorder {
  return {
    holds(entries, origin) {
      // A peer's or a sibling's holds are recorded where they arrive first.
      if (origin === 'local') forward({ type: 'holds', entries: [...entries] })
    },
    routes() {},
    request: (outcome) => forward({ type: 'request', outcome }),
    record: (event) => forward({ type: 'record', event }),
    stats: () => [],
    close: async () => {},
  }
}

/** /metrics: what the history writers wrote, buffered and dropped (and why). */
function registerMetrics({ registry }: Metrics, recorder: Pick<HistoryRecorder, 'stats'>): void {
  scrapedGauge(registry, 'switchboard_history_buffered', 'History rows waiting to be written, by writer', ['writer'], (gauge) => {
    for (const stats of recorder.stats()) gauge.set({ writer: stats.name }, stats.buffered)
  })
  scrapedCounter(registry, 'switchboard_history_written_total', 'History rows written to Postgres, by writer', ['writer'], (counter) => {
    for (const stats of recorder.stats()) counter.inc({ writer: stats.name }, stats.written)
  })
  const dropped = 'History rows given up, by writer and reason (overflow: oldest pushed out of a full buffer while Postgres lagged)'
  scrapedCounter(registry, 'switchboard_history_dropped_total', dropped, ['writer', 'reason'], (counter) => {
    for (const stats of recorder.stats()) for (const [reason, count] of Object.entries(stats.dropped)) counter.inc({ writer: stats.name, reason }, count)
  })
}
