/** Runs a TypeScript fixture in its own Node process (through tsx), as a separate node would be. */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** Runs `fixtures/<name>.ts` with `args`; resolves with its parsed JSON output. */
export async function runFixture<Output>(name: string, args: string[]): Promise<Output> {
  const script = fileURLToPath(new URL(`./fixtures/${name}.ts`, import.meta.url))
  const { stdout } = await run(process.execPath, ['--import', 'tsx', script, ...args], { cwd: fileURLToPath(new URL('..', import.meta.url)) })
  return JSON.parse(stdout) as Output
}
