/**
 * `npm start` as a user runs it (issue 18): a node that dies is reported and started again;
 * Ctrl-C in the terminal (SIGINT to the whole process group) stops everything with exit 0,
 * and starting again at once works, back to back. The launcher runs in its own process
 * group, on a state directory of its own (SWITCHBOARD_STATE_DIR), so it never meets the
 * checkout's own embedded Postgres.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stopEmbeddedDatabase } from '@switchboard/store'
import { freePort } from './launch.ts'

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)))

interface Launcher {
  child: ChildProcess
  output(): string
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>
}

function launch(stateDir: string, port: number): Launcher {
  // detached: its own process group, as a terminal gives a command it runs.
  const child = spawn(process.execPath, [join(root, 'scripts/start.mjs'), '--nodes', '2', '--port', String(port), '--no-load'], {
    cwd: root,
    detached: true,
    env: { ...process.env, SWITCHBOARD_STATE_DIR: stateDir, SWITCHBOARD_DATABASE_URL: '', DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  return {
    child,
    output: () => output,
    waitFor: async (pattern, timeoutMs) => {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(output)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`)
        if (child.exitCode !== null) throw new Error(`the launcher exited with ${child.exitCode}:\n${output}`)
        await new Promise((resolveWait) => setTimeout(resolveWait, 100))
      }
    },
  }
}

/** Ctrl-C in the terminal: SIGINT to the whole group. Resolves with the launcher's exit code. */
async function ctrlC(launcher: Launcher): Promise<number | null> {
  const exited = new Promise<number | null>((resolveExit) => launcher.child.once('exit', (code) => resolveExit(code)))
  process.kill(-launcher.child.pid!, 'SIGINT')
  return exited
}

/** The pid of the gateway process serving HTTP on `port` (its command line names the port). */
async function gatewayPid(port: number): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const command = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')
    if (command.includes('switchboard.js\0serve') && command.includes(`--port\0${port}\0`)) return Number(entry)
  }
  return undefined
}

describe('npm start', () => {
  let stateDir: string
  const running: Launcher[] = []
  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'sb-launcher-'))
  })
  afterAll(async () => {
    for (const launcher of running) if (launcher.child.exitCode === null) process.kill(-launcher.child.pid!, 'SIGKILL')
    await stopEmbeddedDatabase({ dataDir: join(stateDir, 'postgres') }).catch(() => {})
    await rm(stateDir, { recursive: true, force: true })
  })

  it('reports a node that dies and starts it again; Ctrl-C then a restart at once works, back to back', async () => {
    const port = await freePort()
    for (let cycle = 0; cycle < 3; cycle++) {
      const launcher = launch(stateDir, port)
      running.push(launcher)
      await launcher.waitFor(/Switchboard fleet is running/, 90_000)
      if (cycle === 0) {
        const pid = await gatewayPid(port + 1)
        expect(pid).toBeDefined()
        process.kill(pid!, 'SIGKILL')
        await launcher.waitFor(/\[node-2\] exited unexpectedly \(signal SIGKILL\)/, 10_000)
        await launcher.waitFor(/\[node-2\] is back on/, 60_000)
        expect((await fetch(`http://127.0.0.1:${port + 1}/health`)).status).toBe(200)
      }
      for (const offset of [0, 1]) expect((await fetch(`http://127.0.0.1:${port + offset}/health`)).status).toBe(200)
      expect(await ctrlC(launcher), launcher.output()).toBe(0)
      expect(launcher.output()).not.toMatch(/shutdown failed|could not write the last hold snapshot|could not start/)
    }
  }, 240_000)
})
