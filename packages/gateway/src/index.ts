/** @switchboard/gateway — one Switchboard node: the inference API over the provider adapters, the admin API over the config store, the CLI. */
import { createConfigStore, createPool, createWriteQueue, ensureDatabase } from '@switchboard/store'
import { GatewayKeyRing } from './access/gateway-keys.ts'
import { GatewayKeyLoader } from './access/key-loading.ts'
import { KeyLimiter, LIMIT_WINDOW_MS } from './access/limits.ts'
import { createListener } from './http/app.ts'
import { tracingWanted } from './observability/tracing/wanted.ts'
import { scrapedCounter } from './observability/metrics.ts'
import { prepareStore, retryPrepareStore } from './directory/boot.ts'
import { createProviderDirectory } from './directory/directory.ts'
import { createDispatcher } from './dispatch/dispatcher.ts'
import { editedKeys, keySignatures, routingEdits } from './dispatch/key-edits.ts'
import { startFleet, type Fleet } from './fleet/fleet.ts'
import type { Gateway, GatewayInit } from './boot/init.ts'
import { createSettings } from './settings/settings.ts'
import { createAdaptiveBalancer, createHolds, createSessionAffinity, createTrials, RateLimitBackoffs, RECOMPUTE_INTERVAL_MS } from '@switchboard/routing'
import { watchDatabase } from './directory/health.ts'
import { atMost, drainServer } from './boot/shutdown.ts'
import { listenEarly, type Listening } from './boot/listen.ts'
import { isLoopbackHost } from './boot/exposure.ts'
import { cancellableSleep } from './http/surface.ts'
import { createSettingsSave } from './settings/save.ts'
import { createRequestRecorder } from './recording/request-record.ts'
import { startHistoryRecording, type HistoryRecording } from './recording/history.ts'
import { startRequestLog } from './recording/request-log.ts'
import { FLEET_WORKER, type NodeState } from './workers/protocol.ts'
import { alsoToSiblings, answerSiblings, mergesToSiblings, remoteLimiter, sharedOutcomes, sharedSessions, siblingFleet, fleetWorkerUp, takeNews, takeState, type NewsTakers } from './workers/sharing.ts'
import type { ConfigChange } from './fleet/messages.ts'
import { clusterView } from './fleet/view.ts'

export { loadConfig, parseConfig, ConfigError, type GatewayConfig } from './config/load.ts'
export { GatewayError, ERROR_CODES } from './errors.ts'
export { ExposedError } from './boot/exposure.ts'
export type { GatewayInit, Gateway } from './boot/init.ts'

/** Starts a gateway node: listening first (/health says `starting`), then database, providers and fleet; resolves once wired. */
export async function startGateway(init: GatewayInit): Promise<Gateway> {
  // Listening first (issue 37): a probe tells a booting node from a dead one, and traffic waits for readiness.
  const listening = await listenEarly(init)
  try {
    return await wire(init, listening)
  } catch (error) {
    await listening.abandon()
    throw error
  }
}

/** Wires a listening node: database, config import, gateway keys, providers, history, fleet; then hands the server to the full listener. */
async function wire(init: GatewayInit, listening: Listening): Promise<Gateway> {
  const { env, logger, host, nodeId, siblings } = init
  // Each part says how it stops as it starts: the shutdown (and a failed start's undo) stops them newest first.
  const { adminTokens, readiness, metrics, early, server, parts } = listening
  /** A worker of a node with workers that is not its fleet worker: it neither joins the fleet nor writes history. */
  const follower = siblings !== undefined && !siblings.fleetWorker
  const database = await ensureDatabase({ databaseUrl: init.databaseUrl, dataDir: init.dataDir, log: (line) => logger.info(line) })
  // The embedded Postgres's own stop (a fast shutdown) is waited for: left behind, it would outlive the node.
  parts.add('database', () => database.release(), 15_000)
  // The boot's reads overlap on up to three connections: the first read's own and two more, opened together.
  const pool = createPool({ url: database.url, log: (line) => logger.warn(line), open: 2 })
  // Bounded like every step: after a network cut the pool waited on a dead connection until the CLI's 24 s bound.
  parts.add('database pool', () => pool.end())
  const store = createConfigStore({ pool }, { onListenerError: (error) => logger.error({ err: error }, 'config store listener failed') })
  // Postgres down at boot does not stop the node: it serves config.json and its peers' holds until the store answers.
  const prepared = await prepareStore(pool, store, init.config.source, logger)
  const imported = prepared ?? { firstBoot: false, changes: [] }
  if (prepared) logger.info({ firstBoot: imported.firstBoot, changes: imported.changes.length }, imported.firstBoot ? 'imported config.json into the config store' : 'applied config.json to the config store')
  const queue = createWriteQueue({ log: (line) => logger.warn(line) })
  parts.add('store writes', async () => {
    await atMost(2_000, queue.drained())
    queue.close()
  })
  const databaseHealth = watchDatabase({ pool, queue, readiness }, { onChange: (report) => logger.warn({ health: report }, `health: ${report.status}`) })
  listening.watching(databaseHealth)
  parts.add('database health', () => databaseHealth.close())
  // Gateway keys (issue 37): Postgres's, else a peer's (asked once the fleet is up), else config.json's; none known, no inference.
  const gatewayKeys = new GatewayKeyRing()
  const keyLoader = new GatewayKeyLoader({ pool, ring: gatewayKeys, logger, onLoaded: (from) => readiness.update({ gatewayKeys: from }) }, init.config.gatewayKeys)
  let fleet: Fleet | undefined
  const reloadGatewayKeys = async () => {
    try {
      await keyLoader.fromStore()
    } catch (error) {
      if (!(await fleet?.pullGatewayKeys())) throw error
    }
  }
  if (prepared) await keyLoader.fromStore(true)
  else if (!keyLoader.fromConfig()) logger.warn('gateway keys live in Postgres: inference answers 503 gateway_starting until it answers or a peer shares them')
  const windowMs = Number(env.SWITCHBOARD_GATEWAY_KEY_WINDOW_MS) > 0 ? Number(env.SWITCHBOARD_GATEWAY_KEY_WINDOW_MS) : LIMIT_WINDOW_MS
  const limiter = new KeyLimiter({ now: Date.now, windowMs, onLeaseError: (error) => logger.warn({ err: error }, 'could not ask for a gateway key lease; using this node\'s share') })
  const now = Date.now
  const random = Math.random
  const region = init.fleet.region

  // Routing state: held keys and rate-limit backoffs first (the balancer asks them), then the balancer and sessions.
  const holds = createHolds({ nodeId, random })
  const backoffs = new RateLimitBackoffs()
  // Trials of failed routes: one per due time across the fleet (issue 35, item 8); alone until the fleet says it has peers.
  const trials = createTrials({ nodeId, region })
  const balancer = createAdaptiveBalancer({ providers: [], isHeld: (provider, keyId, model) => holds.isHeld(provider, keyId, model) || backoffs.isBackedOff(provider, keyId, model, now()), trials })
  const sessions = createSessionAffinity({ capacity: 100_000, idleMs: 60 * 60_000 })
  // One fleet member with one state (issue 38): the limiter's count lives on the fleet worker.
  const callerLimiter = follower ? remoteLimiter(limiter, siblings) : limiter
  const settings = createSettings(prepared ? (await store.getSettings()).load_balancer_config : init.config.loadBalancer)
  const providers = await createProviderDirectory(
    { store, queue, logger, env },
    {
      onChange: (registry) => {
        balancer.setProviders(registry.list.map((runtime) => ({ provider: runtime.name, keys: runtime.config.keys })))
        readiness.update({ providers: registry.list.length })
      },
      fallback: Object.entries(init.config.source.providers).map(([name, raw]) => ({ ...raw, name })),
    },
  )
  parts.add('upstream connections', () => providers.close())
  let history: HistoryRecording | undefined
  const shared = siblings ? sharedSessions(sessions, siblings) : undefined
  const dispatcher = createDispatcher({
    balancer: siblings ? sharedOutcomes(balancer, siblings) : balancer,
    sessions: shared ?? sessions,
    learnSession: shared?.learn,
    holds, backoffs, metrics, logger, now, random,
    registry: () => providers.registry,
    settings: settings.get,
    onHoldsChanged: (entries) => {
      fleet?.publishHolds(entries)
      history?.holds(entries, 'local')
    },
    onRateLimited: (backoff) => fleet?.publishRateLimit(backoff),
    onTrialsChanged: (entries) => fleet?.publishTrials(entries),
  })
  // A key edit releases its holds; a key or provider delete removes them (dispatch/key-edits.ts).
  const edits = routingEdits({ holds, backoffs, balancer, dispatcher, now })
  parts.add('store listeners', store.on((change) => {
    edits.apply(change)
    // Providers or keys changed here: every node re-reads them from the store.
    if (change.type !== 'settings:changed') fleet?.publishConfig({ kind: 'providers' })
    else {
      store.getSettings().then(
        (saved) => settings.set(saved.load_balancer_config, 'store'),
        (error: unknown) => logger.warn({ err: error }, 'could not read the saved settings'),
      )
    }
  }))
  // A peer (or a sibling worker) changed providers or keys: a key it edited is an edit here too (its holds go, and a refusal sent before it holds nothing).
  const reloadProviders = async () => {
    const before = keySignatures(providers.registry)
    await providers.reload()
    for (const key of editedKeys(before, providers.registry)) edits.keyEdited(key.provider, key.keyId)
  }
  const configChanged = (change: ConfigChange) => {
    if (change.kind === 'gateway_keys') reloadGatewayKeys().catch((error: unknown) => logger.warn({ err: error }, 'could not reload gateway keys another worker changed'))
    else if (change.kind === 'providers') reloadProviders().catch((error: unknown) => logger.warn({ err: error }, 'could not reload providers another worker changed'))
  }
  let baseFleet: Fleet | undefined
  const takers: NewsTakers = { holds, dispatcher, balancer, sessions, settings, fleet: () => baseFleet, configChanged, history: (events) => history?.forwarded(events), now }
  if (siblings) {
    siblings.onNews((news) => takeNews(takers, news))
    // A worker started later (or again, after one died) takes the node's state before it serves.
    const state = (await siblings.ask('state', null).catch(() => null)) as NodeState | null
    if (state !== null) takeState(takers, state)
  }
  const keyName = (provider: string, keyId: string) => providers.registry.get(provider)?.config.keys.find((key) => key.id === keyId)?.name
  // The per-request record: the request log and the per-minute counts listen to it.
  const recorder = createRequestRecorder(
    {
      now,
      secrets: () => providers.registry.list.flatMap((runtime) => runtime.config.keys.map((key) => key.value)),
      recordContent: () => init.config.requestLog.content,
      onListenerError: (error) => logger.error({ err: error }, 'a request record listener failed'),
    },
    { nodeId, region },
  )

  const recompute = setInterval(() => {
    dispatcher.recompute()
    history?.recomputed()
    metrics.holdsActive.reset()
    for (const condition of holds.conditions()) metrics.holdsActive.inc({ reason: condition.reason })
  }, RECOMPUTE_INTERVAL_MS)
  recompute.unref()
  parts.add('recompute', () => clearInterval(recompute))

  // History (issue 14): records what routing saw and did, off the request path.
  history = await startHistoryRecording(
    {
      pool, store, balancer, recorder, keyName, settings: settings.get, metrics, logger, now,
      isLeader: async () => (fleet === undefined || follower ? false : (await fleet.view()).node.leader),
      ...(follower ? { forward: (event) => siblings.history(event) } : {}),
    },
    { nodeId, region, env, configured: init.config.loadBalancer },
  )
  const recording = history
  parts.add('history flush', () => recording.close())
  // config.json's edits at this boot were made before history listened: recorded now, with what they changed (never a value).
  recording.configImported(imported.changes)
  baseFleet = follower
    ? siblingFleet(siblings, { view: () => clusterView({ cluster: null, pool, holds, isLeader: () => false }, { nodeId, region }), keys: keyLoader })
    : await startFleet(
    {
      holds, trials, pool, logger, metrics, now, random, limiter,
      dispatcher: siblings ? mergesToSiblings(recording.observeMerges(dispatcher), siblings) : recording.observeMerges(dispatcher),
      // A peer's change is the siblings' too.
      reloadProviders: () => reloadProviders().then(() => siblings?.tell({ kind: 'config', change: { kind: 'providers' } })),
      knownKey: (provider, keyId) => providers.registry.get(provider)?.config.keys.some((key) => key.id === keyId) ?? false,
      applySettings: (next) => settings.set(next, 'peer'),
      reloadGatewayKeys: () => reloadGatewayKeys().then(() => siblings?.tell({ kind: 'config', change: { kind: 'gateway_keys' } })),
      gatewayKeys: keyLoader,
    },
    { ...init.fleet, nodeId, host },
  )
  fleet = siblings ? alsoToSiblings(baseFleet, siblings) : baseFleet
  const joined = fleet
  parts.add('leaving the fleet', () => joined.stop(), 5_000)
  if (siblings) answerSiblings(siblings, { metrics, fleet: joined, limiter, keys: keyLoader })
  // Besides peers' announcements: re-read gateway keys every few seconds (a lost message, a key revoked by SQL).
  const keysReload = setInterval(() => keyLoader.fromStore().catch((error: unknown) => logger.debug({ err: error }, 'could not reload gateway keys')), 5_000)
  keysReload.unref()
  parts.add('gateway keys reload', () => clearInterval(keysReload))
  // The switches this node changed (its API, or config.json picked up at boot) reach the running peers.
  parts.add('settings listener', settings.onChange((next, origin) => {
    if (origin !== 'peer') joined.publishConfig({ kind: 'settings', settings: next })
    if (origin !== 'worker') siblings?.tell({ kind: 'settings', settings: next })
  }))
  // config.json read at this boot may have edited keys and switches: the same as any other edit, on every node.
  for (const change of imported.changes) edits.apply(change)
  if (imported.changes.some((change) => change.type !== 'settings:changed')) joined.publishConfig({ kind: 'providers' })
  if (imported.changes.some((change) => change.type === 'settings:changed')) joined.publishConfig({ kind: 'settings', settings: settings.get() })

  const requestLog = await startRequestLog(
    {
      pool, recorder, metrics, now,
      isLeader: async () => !follower && (await joined.view()).node.leader,
      log: (line) => logger.warn(line),
      keyNames: () => providers.registry.list.flatMap((runtime) => runtime.config.keys),
    },
    init.config.requestLog,
  )
  parts.add('request log flush', () => requestLog.close())

  // Started without Postgres: once it answers, migrate, apply config.json and read the store as a boot would.
  if (!prepared) {
    parts.add('store retry', retryPrepareStore(
      () => prepareStore(pool, store, init.config.source, logger, true),
      async () => {
        await keyLoader.fromStore(true)
        await providers.reload()
        settings.set((await store.getSettings()).load_balancer_config, 'store')
      },
      logger,
    ))
  }
  // Batched news (finished attempts, sessions, history) goes out before anything else stops.
  if (siblings) parts.add('worker news', () => siblings.close())
  if (adminTokens.length === 0 && isLoopbackHost(host)) logger.warn('no admin tokens configured: the admin API answers loopback clients only (set SWITCHBOARD_ADMIN_TOKENS)')

  // OpenTelemetry traces: off unless the OTEL_EXPORTER_OTLP_* variables name an endpoint (docs/operations.md, "Traces").
  const tracing = tracingWanted(process.env) ? (await import('./observability/tracing/setup.ts')).tracingFromEnv(process.env, { nodeId, region, log: (level, message) => logger[level](message) }) : null
  if (tracing !== null) {
    parts.add('traces flush', () => tracing.shutdown())
    scrapedCounter(metrics.registry, 'switchboard_trace_spans_dropped_total', 'Spans dropped because the OTLP export queue was full', [], (counter) => counter.inc(tracing.dropped()))
    scrapedCounter(metrics.registry, 'switchboard_trace_spans_failed_total', 'Spans lost because their OTLP export failed (collector unreachable, refusing or timing out)', [], (counter) => counter.inc(tracing.failed()))
  }
  const listener = createListener(
    {
      dispatcher, tracing, metrics, logger, recorder, now,
      directory: providers,
      health: databaseHealth,
      clusterView: () => joined.view(),
      logs: requestLog.api,
      history: () => recording.queries,
      sleep: cancellableSleep,
      callers: { keys: gatewayKeys, limiter: callerLimiter, readiness },
      gatewayKeys: {
        pool, keys: gatewayKeys,
        async changed() {
          // The write landed: a read-back that fails (Postgres gone just after) is logged, never a 500.
          await keyLoader.fromStore().catch((error: unknown) => logger.warn({ err: error }, 'a gateway key change landed but the keys could not be read back; peers re-read them'))
          joined.publishConfig({ kind: 'gateway_keys' })
        },
      },
      adaptive: {
        balancer, holds, dispatcher, keyName, now,
        settings: settings.get,
        saveSettings: createSettingsSave({ store, queue, settings, history: () => recording }),
        history: { settings: () => ({ ...recording.settings() }) },
      },
    },
    { maxRequestBodyBytes: init.config.maxRequestBodyBytes, allowDirectKeys: init.config.allowDirectKeys, adminTokens, allowedOrigins: init.config.allowedOrigins, env },
  )
  early.switchTo(listener)
  // Another worker that boots faster than the fleet worker must not make /health read ready while
  // the fleet worker, on the same port, still answers "starting": it listens once that one is up.
  if (siblings && init.listenLate && siblings.index !== FLEET_WORKER) await fleetWorkerUp(siblings, logger)
  // A worker that joins a node already serving takes connections only now: never one booting.
  await listening.open()
  // Which worker answered (`--workers N`): for an operator reading a trace, and for the tests that aim at one.
  if (siblings) server.prependListener('request', (_request, response) => response.setHeader('x-switchboard-worker', String(siblings.index)))
  readiness.update({ booted: true })
  if (!readiness.ready) logger.warn({ reasons: readiness.get().starting }, 'not ready to serve inference yet: /health says starting')
  let closing: Promise<void> | undefined
  return {
    url: listening.url,
    port: listening.port,
    // Once: a second call (a second signal) waits for the first instead of ending the pool under it.
    close(options = {}) {
      closing ??= shutDown(options)
      return closing
    },
  }

  async function shutDown(options: { drainMs?: number }): Promise<void> {
    // Drain: /health turns 503, no new connections, in-flight requests finish within the bound, the rest is cut.
    databaseHealth.setDraining()
    await drainServer(server, options.drainMs ?? 20_000, logger)
    await parts.stop()
  }
}

