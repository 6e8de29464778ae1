/**
 * A real zombie process for tests: `sh` starts a child that exits at once, then execs
 * `sleep`, which never reaps it. Until `release()` the child's pid stays a zombie (state
 * `Z`): `kill(pid, 0)` succeeds on it, as on a SIGKILLed postmaster PID 1 has not reaped.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

export interface Zombie {
  pid: number
  /** Kills the parent; init reaps the zombie. */
  release(): void
}

export async function makeZombie(): Promise<Zombie> {
  const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 120'], { stdio: ['ignore', 'pipe', 'ignore'] })
  const pid = await new Promise<number>((resolve, reject) => {
    parent.stdout.once('data', (data: Buffer) => resolve(Number(data.toString().trim())))
    parent.once('error', reject)
  })
  for (let tries = 0; tries < 100; tries++) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) break
    await sleep(20)
  }
  return { pid, release: () => parent.kill('SIGKILL') }
}
