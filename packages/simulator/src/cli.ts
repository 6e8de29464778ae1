/**
 * `switchboard-simulator --port N --host H --seed N --rules file.json`:
 * runs one simulator until SIGTERM or SIGINT.
 */
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { createSimulator, type SimulatorRule } from './index.ts'

function integer(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`--${name} must be a non-negative integer, got "${value}"`)
  return parsed
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      seed: { type: 'string' },
      rules: { type: 'string' },
    },
  })
  const simulator = await createSimulator({
    port: integer(values.port, 'port'),
    host: values.host,
    seed: integer(values.seed, 'seed'),
    // Checked by createSimulator, which throws a RuleError naming the bad rule.
    rules: values.rules === undefined ? undefined : JSON.parse(await readFile(values.rules, 'utf8')) as SimulatorRule[],
  })
  process.stdout.write(`simulator listening on ${simulator.url}\n`)
  const stop = (): void => {
    void simulator.close().then(() => process.exit(0))
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  // Started by a launcher that asked for it: stop once the launcher is gone (an orphan is re-parented).
  if (process.env.SWITCHBOARD_EXIT_WITH_PARENT === '1') {
    const parent = process.ppid
    // Once is enough, but a second call is harmless: close() is shared, and the first exit ends all.
    setInterval(() => {
      if (process.ppid !== parent) stop()
    }, 1_000).unref()
  }
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`switchboard-simulator: ${message}\n`)
  process.exit(1)
})
