/** Running commands for the deploy test: bounded in time, output kept for the failure message. */
import { spawn } from 'node:child_process'

/** What a finished command left. */
export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Options of one command. */
export interface RunOptions {
  /** Kill it after this long (default 2 minutes). */
  timeoutMs?: number
  /** Extra environment (merged over process.env). */
  env?: NodeJS.ProcessEnv
  cwd?: string
  input?: string
  /** Return a failure instead of throwing it. */
  allowFail?: boolean
  /** Stream the output to ours (long builds and installs). */
  echo?: boolean
}

/** Runs a command (no shell); throws with its output when it fails or times out, unless allowFail. */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<Ran> {
  const timeoutMs = options.timeoutMs ?? 120_000
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (data: Buffer) => {
      stdout += data.toString()
      if (options.echo) process.stdout.write(data)
    })
    child.stderr!.on('data', (data: Buffer) => {
      stderr += data.toString()
      if (options.echo) process.stderr.write(data)
    })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, timeoutMs)
    child.on('error', (error) => {
      clearTimeout(timer)
      if (options.allowFail) resolve({ code: 127, stdout, stderr: `${stderr}${error.message}` })
      else reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      const ran = { code: timedOut ? null : code, stdout, stderr }
      if ((code === 0 && !timedOut) || options.allowFail) return resolve(ran)
      const why = timedOut ? `timed out after ${timeoutMs / 1000} s` : `exited ${code}`
      reject(new Error(`${command} ${args.join(' ')} ${why}\n${tail(stdout)}\n${tail(stderr)}`))
    })
    if (child.stdin) {
      child.stdin.on('error', () => {})
      child.stdin.end(options.input)
    }
  })
}

/** The last lines of a long output. */
export function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}

/** Is this program on the PATH? */
export async function hasProgram(name: string): Promise<boolean> {
  return (await run('sh', ['-c', `command -v ${name}`], { allowFail: true })).code === 0
}

/** Waits until `check` returns a value other than undefined, polling; throws with `what` after timeoutMs. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 500): Promise<T> {
  const until = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    if (Date.now() > until) throw new Error(`gave up waiting ${timeoutMs / 1000} s for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`)
    await sleep(everyMs)
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** One line of the test's report, timestamped. */
export function say(line: string): void {
  process.stdout.write(`[deploy ${new Date().toISOString().slice(11, 19)}] ${line}\n`)
}
