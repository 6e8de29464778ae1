/**
 * The config store at boot without making Postgres a condition of serving (issue 18): a node
 * started while Postgres is down serves config.json and keeps trying; once Postgres answers, it
 * migrates, applies config.json and reloads the store.
 */
import type { Logger } from 'pino'
import { migrate, type ConfigStore, type ImportResult, type DatabasePool } from '@switchboard/store'
import { atMost } from '../boot/shutdown.ts'

/** How long a boot waits for Postgres to migrate and import before serving without it. */
const PREPARE_MS = 10_000

/** Migrates and imports config.json; null when Postgres did not answer within PREPARE_MS. */
export async function prepareStore(pool: DatabasePool, store: ConfigStore, source: Parameters<ConfigStore['importConfig']>[0], logger: Logger, quiet = false): Promise<ImportResult | null> {
  try {
    const imported = await atMost(PREPARE_MS, migrate(pool).then(() => store.importConfig(source)))
    if (imported !== undefined) return imported
    throw new Error(`no answer within ${PREPARE_MS} ms`)
  } catch (error) {
    if (quiet) logger.debug({ err: error }, 'Postgres still not answering')
    else logger.warn({ err: error }, 'Postgres is not answering at boot: serving config.json and what peers hold; the store catches up when it answers')
    return null
  }
}

/** Retries `prepareStore` every 5 s until it works, then calls `onReady`; returns the stopper. */
export function retryPrepareStore(attempt: () => Promise<ImportResult | null>, onReady: (imported: ImportResult) => Promise<void>, logger: Logger): () => void {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  const later = () => (timer = setTimeout(() => void round(), 5_000).unref())
  const round = async () => {
    const imported = await attempt()
    if (stopped) return
    if (imported === null) return void later()
    await onReady(imported).catch((error: unknown) => logger.warn({ err: error }, 'could not pick up the store after Postgres came back'))
    logger.info('Postgres answers: migrated, config.json applied, providers and settings read from the store')
  }
  later()
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
