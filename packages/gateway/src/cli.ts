/** `switchboard serve --config <file> --port <n>`: every flag also as SWITCHBOARD_<NAME>. */
import { parseArgs } from 'node:util'
import pino from 'pino'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig } from './config/load.ts'
import { configEnvReferences, describePlaceholders, placeholderSecrets } from './config/placeholders.ts'
import { parseWorkers } from './workers/count.ts'
import { connectSiblings } from './workers/siblings.ts'
import { startPrimary } from './workers/hub.ts'

const USAGE = `Usage: switchboard serve --config <file> [--port <n>] [--host <addr>]
       [--node-id <id>] [--region <name>] [--p2p-port <n>] [--peers <list>]
       [--fleet-secret <secret>] [--database-url <url>] [--data-dir <dir>]
       [--workers <n|auto>] [--insecure]

--workers runs n event loops behind the one port (default: one per core the
process may use, at most 8); the node stays one fleet member with one state.

--insecure lets a node listen on a non-loopback --host with no admin tokens
(it warns at every start); without it such a node refuses to start.

Every flag can also be set as an environment variable SWITCHBOARD_<NAME>
(e.g. SWITCHBOARD_PORT, SWITCHBOARD_DATABASE_URL; DATABASE_URL also works).`

/** Whether this process runs the compiled bundle (bin/compiled.mjs) or the TypeScript sources through tsx. */
export const RUNNING_FROM: 'bundle' | 'source' = import.meta.url.endsWith('/dist/switchboard.cjs') ? 'bundle' : 'source'

/** How long in-flight requests may run after SIGTERM before the node closes them. */
export const SHUTDOWN_DRAIN_MS = 20_000
/**
 * The hard bound of a shutdown: the process exits this long after SIGTERM whatever still runs.
 * The deploy files' grace periods must exceed it; deploy/test reads it from here.
 */
export const SHUTDOWN_BOUND_MS = 24_000

const FLAGS = ['config', 'port', 'host', 'node-id', 'region', 'p2p-port', 'peers', 'fleet-secret', 'database-url', 'data-dir', 'workers'] as const

/** Runs the CLI; returns the process exit code for failures before the server is up. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { ...Object.fromEntries(FLAGS.map((flag) => [flag, { type: 'string' as const }])), help: { type: 'boolean', short: 'h' }, insecure: { type: 'boolean' } },
    })
  } catch (error) {
    return fail(`${(error as Error).message}\n\n${USAGE}`)
  }
  const [command] = parsed.positionals
  if (parsed.values.help || command === undefined || command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return command === undefined && !parsed.values.help ? 2 : 0
  }
  if (command !== 'serve') return fail(`unknown command "${command}"\n\n${USAGE}`)
  const flagGiven = (flag: Flag) => typeof (parsed.values as Record<string, unknown>)[flag] === 'string'
  const option = (flag: Flag): string | undefined => {
    if (flagGiven(flag)) return (parsed.values as Record<string, string>)[flag]
    const fromEnv = env[envName(flag)]
    if (fromEnv) return fromEnv
    return flag === 'database-url' ? env.DATABASE_URL : undefined
  }
  const configFile = option('config')
  if (configFile === undefined) return fail(`--config <file> is required\n\n${USAGE}`)
  const port = portOption('port', option('port') ?? '8080')
  if (port === null) return 2
  const p2pPort = portOption('p2p-port', option('p2p-port') ?? '9000')
  if (p2pPort === null) return 2
  const nodeId = option('node-id') ?? `${hostname()}-${port}`
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(nodeId)) return fail(`--node-id may use letters, digits, "_", "-" and "." (got "${nodeId}")`)
  const workers = parseWorkers(option('workers'))
  if (typeof workers === 'string') return fail(workers)
  const peers = (option('peers') ?? '').split(',').map((peer) => peer.trim()).filter((peer) => peer !== '')
  let config
  try {
    config = await loadConfig(configFile, env)
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message, 1)
    throw error
  }
  // Where a flag's value came from, to name it in an error: the flag, or the variable.
  const origin = (flag: Flag): string => (flagGiven(flag) ? `--${flag}` : (env[envName(flag)] || flag !== 'database-url') ? envName(flag) : 'DATABASE_URL')
  const placeholders = placeholderSecrets([
    { name: origin('fleet-secret'), value: option('fleet-secret') },
    { name: 'SWITCHBOARD_ADMIN_TOKENS', value: env.SWITCHBOARD_ADMIN_TOKENS },
    { name: origin('database-url'), value: option('database-url') },
    ...configEnvReferences(config.source).map((name) => ({ name, value: env[name] })),
  ])
  if (placeholders.length > 0) return fail(describePlaceholders(placeholders), 1)
  const siblings = connectSiblings(env)
  const logger = siblings ? pino({ level: env.LOG_LEVEL ?? 'info' }).child({ worker: siblings.index }) : pino({ level: env.LOG_LEVEL ?? 'info' })
  if (workers > 1 && siblings === null) return runPrimary(workers, logger, config.providers.map((provider) => provider.name))
  // Loaded here, not at the top: the primary of a node with workers serves nothing and never
  // evaluates the gateway's modules (issue 38, item 3: its memory); a node that serves loads it now.
  const { startGateway } = await import('./index.ts')
  let gateway
  try {
    gateway = await startGateway({
      config,
      port,
      host: option('host') ?? '127.0.0.1',
      databaseUrl: option('database-url'),
      nodeId,
      env,
      logger,
      insecure: parsed.values.insecure === true || /^(1|true|yes)$/i.test(env.SWITCHBOARD_INSECURE ?? ''),
      ...(siblings ? { siblings, listenLate: env.SWITCHBOARD_WORKER_LISTEN !== 'early' } : {}),
      // Before Postgres and the fleet: /health answers "starting" from here; "listening on" follows once every route is wired.
      onListening: (url) => logger.child({}, { level: 'info' }).info({ url, code: RUNNING_FROM }, `switchboard starting on ${url}`),
      fleet: { region: option('region') ?? 'default', p2pPort, peers, dataDir: option('data-dir') ?? join('.switchboard', 'nodes', nodeId), ...(option('fleet-secret') ? { fleetSecret: option('fleet-secret')! } : {}) },
    })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return fail(code === 'EADDRINUSE' || code === 'EACCES' ? `cannot listen on port ${port}: ${code}` : `could not start: ${(error as Error).message}`, 1)
  }
  // Printed whatever the log level: launchers and people wait for this line (a worker's primary prints it once all are up).
  if (siblings) siblings.ready(gateway.url)
  else logger.child({}, { level: 'info' }).info({ url: gateway.url, providers: config.providers.map((provider) => provider.name) }, `switchboard listening on ${gateway.url}`)
  // One shutdown whatever arrives (Ctrl-C's SIGINT, then a launcher's SIGTERM): a second would end
  // the pool under the first one's last snapshot. Later signals are logged and ignored.
  onStopSignals((signal) => {
    logger.info({ signal }, 'shutting down: draining in-flight requests')
    void gateway.close({ drainMs: SHUTDOWN_DRAIN_MS }).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
    // Inside the deploy files' grace periods (deploy/README.md, "Stopping"), whatever happens.
    setTimeout(() => process.exit(0), SHUTDOWN_BOUND_MS).unref()
  }, (signal) => logger.info({ signal }, 'already shutting down; ignoring the signal'), siblings !== null)
  return 0
}

type Flag = (typeof FLAGS)[number]

/** A flag's environment variable: SWITCHBOARD_<NAME>. */
function envName(flag: Flag): string {
  return `SWITCHBOARD_${flag.toUpperCase().replaceAll('-', '_')}`
}

/** Prints `switchboard: <message>` to stderr; returns the exit code. */
function fail(message: string, code = 2): number {
  process.stderr.write(`switchboard: ${message}\n`)
  return code
}

/** A port flag's value, or null once its error is printed. */
function portOption(flag: Flag, text: string): number | null {
  const port = Number(text)
  if (Number.isInteger(port) && port >= 0 && port <= 65535) return port
  fail(`--${flag} must be a whole number from 0 to 65535 (got "${text}")`)
  return null
}

/** Calls `stop` once on SIGTERM, SIGINT, the launcher's exit (SWITCHBOARD_EXIT_WITH_PARENT=1) or a worker's primary's; later ones go to `again`. */
function onStopSignals(stop: (signal: string) => void, again: (signal: string) => void = () => {}, worker = false): void {
  let stopping = false
  const once = (signal: string) => {
    if (stopping) return again(signal)
    stopping = true
    stop(signal)
  }
  process.on('SIGTERM', () => once('SIGTERM'))
  process.on('SIGINT', () => once('SIGINT'))
  if (process.env.SWITCHBOARD_EXIT_WITH_PARENT === '1') onParentExit(() => once('parent exited'))
  // A worker whose primary is gone (killed too hard to stop it) stops as on SIGTERM.
  if (worker) process.on('disconnect', () => once('the primary exited'))
}

/** The primary of a node with workers (workers/hub.ts): on a signal it stops the workers and exits once they have. */
function runPrimary(workers: number, logger: pino.Logger, providers: string[]): number {
  const primary = startPrimary({
    workers,
    logger,
    onReady: (url) => logger.child({}, { level: 'info' }).info({ url, providers, workers }, `switchboard listening on ${url}`),
    onFailed: (reason) => {
      logger.error(`switchboard: could not run: ${reason}`)
      void primary.stop(SHUTDOWN_BOUND_MS).then(() => process.exit(1))
    },
  })
  onStopSignals((signal) => {
    logger.info({ signal, workers }, 'shutting down: every worker drains its in-flight requests')
    void primary.stop(SHUTDOWN_BOUND_MS).then(() => process.exit(0))
  })
  return 0
}

/** For launchers (`npm start`, the chaos run): stops once the launcher is gone, even killed hard (an orphan's parent pid changes). */
function onParentExit(stop: () => void): void {
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    stop()
  }, 1_000)
  watch.unref()
}
