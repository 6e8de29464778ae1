/**
 * Who uses the embedded server right now: one file per handle under `<dataDir>.users/`,
 * named `<pid>-<start time>-<random>`. The server is stopped only when the last live user
 * releases it; a user that died without releasing (SIGKILL) no longer counts, because its
 * pid is gone, a zombie, or now belongs to a process that started later.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isRunning, processStartTime } from './processes.ts'

/** Registers this process as a user; resolves with the file to remove on release. */
export async function registerUser(directory: string): Promise<string> {
  await mkdir(directory, { recursive: true })
  const file = join(directory, `${process.pid}-${processStartTime(process.pid) ?? 'na'}-${randomBytes(4).toString('hex')}`)
  await writeFile(file, '')
  return file
}

/** Removes a registration (a missing one is fine). */
export async function unregisterUser(file: string): Promise<void> {
  await rm(file, { force: true })
}

/** The registrations of live users; those of dead processes are removed on the way. */
export async function liveUsers(directory: string): Promise<string[]> {
  const live: string[] = []
  for (const name of await readdir(directory).catch(() => [])) {
    const [pidText, startTime] = name.split('-')
    const pid = Number(pidText)
    const alive = isRunning(pid) && (startTime === 'na' || startTime === undefined || processStartTime(pid) === undefined || processStartTime(pid) === startTime)
    if (alive) live.push(join(directory, name))
    else await rm(join(directory, name), { force: true })
  }
  return live
}
