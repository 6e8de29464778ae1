/**
 * Runs fleet fixtures (`fixtures/node.ts`, `fixtures/rogue.ts`) as real
 * processes and talks to them one JSON line at a time. Every process started
 * here is remembered so `stopAll()` can kill it at the end of a test file.
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** One line a fixture printed. */
export type Line = Record<string, unknown> & { event: string }

const running = new Set<FixtureProcess>()

/** This package's fixtures by name, or another package's fixture speaking the same protocol (command-loop.ts). */
export type Fixture = 'node' | 'rogue' | { script: string; cwd: string }
const packageDir = fileURLToPath(new URL('..', import.meta.url))

/** A fixture running in its own process. */
export class FixtureProcess {
  readonly lines: Line[] = []
  readonly name: string
  readonly exited: Promise<void>
  private readonly child: ChildProcess
  private readonly waiters = new Set<() => void>()
  private nextId = 1
  stderr = ''

  private constructor(name: string, fixture: Fixture, config: unknown) {
    this.name = name
    const script = typeof fixture === 'string' ? fileURLToPath(new URL(`./fixtures/${fixture}.ts`, import.meta.url)) : fixture.script
    this.child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(config)], { cwd: typeof fixture === 'string' ? packageDir : fixture.cwd, stdio: ['pipe', 'pipe', 'pipe'] })
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()))
    createInterface({ input: this.child.stdout! }).on('line', (text) => {
      try {
        this.lines.push(JSON.parse(text) as Line)
      } catch {
        this.lines.push({ event: 'unparsed', text })
      }
      for (const wake of [...this.waiters]) wake()
    })
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-20_000)
    })
    this.child.once('exit', () => {
      for (const wake of [...this.waiters]) wake()
    })
    running.add(this)
  }

  /** Starts a fixture and waits for its `ready` line. */
  static async start(name: string, fixture: Fixture, config: unknown): Promise<FixtureProcess> {
    const started = new FixtureProcess(name, fixture, config)
    await started.waitFor((line) => line.event === 'ready', 30_000)
    return started
  }

  /** The `ready` line's peer id. */
  get peerId(): string {
    return String(this.lines.find((line) => line.event === 'ready')?.peerId)
  }

  /** Resolves with the first line (already printed or still to come) that matches. */
  async waitFor(match: (line: Line) => boolean, timeoutMs = 20_000, from = 0): Promise<Line> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.lines.slice(from).find(match)
      if (found !== undefined) return found
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`${this.name} exited while waiting; stderr:\n${this.stderr}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`${this.name}: timed out waiting for a line; last lines:\n${this.lines.slice(-5).map((line) => JSON.stringify(line)).join('\n')}\nstderr:\n${this.stderr.slice(-2000)}`)
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer)
          this.waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, left)
        this.waiters.add(wake)
      })
    }
  }

  /** Sends a command and resolves with its reply. */
  async command(command: Record<string, unknown>, timeoutMs = 30_000): Promise<Line> {
    const id = this.nextId++
    const from = this.lines.length
    this.child.stdin!.write(`${JSON.stringify({ ...command, id })}\n`)
    return this.waitFor((line) => line.event === 'reply' && line.id === id, timeoutMs, from)
  }

  /** Polls `command` until `accept` holds for its reply. */
  async poll(command: Record<string, unknown>, accept: (reply: Line) => boolean, timeoutMs = 20_000): Promise<Line> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const reply = await this.command(command)
      if (accept(reply)) return reply
      if (Date.now() > deadline) throw new Error(`${this.name}: ${JSON.stringify(command)} never satisfied; last reply ${JSON.stringify(reply)}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** Sends a signal and waits for the process to end. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal)
    await this.exited
    running.delete(this)
  }
}

/** Kills every fixture process still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((fixture) => fixture.kill('SIGKILL')))
}

