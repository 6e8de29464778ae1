/**
 * A launcher killed with SIGKILL cannot stop its children; the ones it started with
 * SWITCHBOARD_EXIT_WITH_PARENT=1 stop by themselves once they are orphaned.
 */
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { isRunning } from '../../packages/store/src/embedded/processes.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const simulatorBin = join(root, 'packages', 'simulator', 'bin', 'simulator.js')

/** Starts a launcher process that starts a simulator; resolves with both pids once the simulator listens. */
function launch(exitWithParent: boolean): Promise<{ launcher: number; simulator: number }> {
  const script = `
    const { spawn } = require('node:child_process')
    const child = spawn(process.execPath, [${JSON.stringify(simulatorBin)}, '--port', '0'], { env: { ...process.env, SWITCHBOARD_EXIT_WITH_PARENT: '${exitWithParent ? '1' : '0'}' }, stdio: ['ignore', 'pipe', 'inherit'] })
    child.stdout.on('data', (data) => { if (String(data).includes('listening')) console.log('child ' + child.pid) })
  `
  return new Promise((resolve, reject) => {
    const launcher = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const timer = setTimeout(() => reject(new Error('the simulator did not start')), 20_000)
    launcher.stdout.on('data', (data: Buffer) => {
      const match = /child (\d+)/.exec(String(data))
      if (!match) return
      clearTimeout(timer)
      resolve({ launcher: launcher.pid!, simulator: Number(match[1]) })
    })
  })
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return check()
}

describe('a launcher killed with SIGKILL', () => {
  it('leaves no child running that was asked to exit with it, and the others running', async () => {
    const watched = await launch(true)
    const unwatched = await launch(false)
    try {
      process.kill(watched.launcher, 'SIGKILL')
      process.kill(unwatched.launcher, 'SIGKILL')
      expect(await waitUntil(() => !isRunning(watched.simulator), 10_000)).toBe(true)
      expect(isRunning(unwatched.simulator)).toBe(true)
    } finally {
      for (const pid of [watched.simulator, unwatched.simulator]) if (isRunning(pid)) process.kill(pid, 'SIGKILL')
    }
  }, 40_000)
})
