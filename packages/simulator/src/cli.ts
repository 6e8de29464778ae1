/**
 * `switchboard-simulator --port N --host H --seed N --rules file.json`:
 * runs one simulator until SIGTERM or SIGINT.
 */
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { createSimulator, RuleError } from './index.ts'
import { parseRules } from './rules/validate.ts'

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
  const rules = values.rules === undefined ? undefined : parseRules(JSON.parse(await readFile(values.rules, 'utf8')))
  const simulator = await createSimulator({
    port: integer(values.port, 'port'),
    host: values.host,
    seed: integer(values.seed, 'seed'),
    rules,
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
    const watch = setInterval(() => {
      if (process.ppid === parent) return
      clearInterval(watch)
      stop()
    }, 1_000)
    watch.unref()
  }
}

main().catch((error: unknown) => {
  const message = error instanceof RuleError || error instanceof Error ? error.message : String(error)
  process.stderr.write(`switchboard-simulator: ${message}\n`)
  process.exit(1)
})
