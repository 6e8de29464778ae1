import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { breakLock, readLock, removeLock, tryCreateLock } from './lock.ts'

describe('embedded server lock file', () => {
  let directory: string
  let lock: string
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'switchboard-lock-'))
    lock = join(directory, 'postgres.lock')
  })
  afterEach(() => rm(directory, { recursive: true, force: true }))

  it('lets only one process create it', async () => {
    const results = await Promise.all([1, 2, 3].map((pid) => tryCreateLock(lock, { pid, port: 1, phase: 'starting' })))
    expect(results.filter(Boolean)).toHaveLength(1)
  })

  it('breaks the stale lock it saw', async () => {
    await tryCreateLock(lock, { pid: 7, port: 1, phase: 'running' })
    const seen = await readLock(lock)
    await breakLock(lock, seen!.text)
    expect(await readLock(lock)).toBeUndefined()
  })

  it('puts back a fresh lock that replaced the stale one it saw', async () => {
    await tryCreateLock(lock, { pid: 7, port: 1, phase: 'running' })
    const stale = await readLock(lock)
    await rm(lock)
    await tryCreateLock(lock, { pid: 8, port: 1, phase: 'starting' })
    await breakLock(lock, stale!.text)
    expect((await readLock(lock))?.state).toEqual({ pid: 8, port: 1, phase: 'starting' })
  })

  it('removes a lock only for the pid that holds it', async () => {
    await tryCreateLock(lock, { pid: 7, port: 1, phase: 'starting' })
    await removeLock(lock, 8)
    expect(await readFile(lock, 'utf8')).toContain('"pid":7')
    await removeLock(lock, 7)
    expect(await readLock(lock)).toBeUndefined()
  })

  it('reads a half-written lock as present but unparsed', async () => {
    await writeFile(lock, '')
    expect(await readLock(lock)).toEqual({ state: undefined, text: '' })
  })
})
