import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { isRunning, processStartTime } from './processes.ts'
import { makeZombie, type Zombie } from '../../test/zombie.ts'

describe.skipIf(!existsSync('/proc/self/stat'))('process state', () => {
  let zombie: Zombie
  beforeAll(async () => {
    zombie = await makeZombie()
  })
  afterAll(() => zombie.release())

  it('calls a zombie not running, though kill(pid, 0) succeeds on it', () => {
    expect(() => process.kill(zombie.pid, 0)).not.toThrow()
    expect(isRunning(zombie.pid)).toBe(false)
  })

  it('calls this process running, with a start time', () => {
    expect(isRunning(process.pid)).toBe(true)
    expect(processStartTime(process.pid)).toMatch(/^\d+$/)
  })

  it('calls a pid nobody has not running', () => {
    expect(isRunning(2 ** 30)).toBe(false)
    expect(isRunning(0)).toBe(false)
  })
})
