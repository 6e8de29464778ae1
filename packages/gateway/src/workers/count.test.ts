import { describe, expect, it } from 'vitest'
import { cgroupCpus, defaultWorkers, MAX_DEFAULT_WORKERS, parseWorkers } from './count.ts'

describe('worker count', () => {
  it('reads a cgroup v2 quota, rounded up', () => {
    expect(cgroupCpus('200000 100000\n')).toBe(2)
    expect(cgroupCpus('150000 100000')).toBe(2)
    expect(cgroupCpus('max 100000')).toBeNull()
    expect(cgroupCpus(null)).toBeNull()
    expect(cgroupCpus('garbage')).toBeNull()
  })

  it('defaults to the cores the process may use, within its quota and the default cap', () => {
    expect(defaultWorkers(4, null)).toBe(4)
    expect(defaultWorkers(64, '200000 100000')).toBe(2)
    expect(defaultWorkers(2, '800000 100000')).toBe(2)
    expect(defaultWorkers(64, 'max 100000')).toBe(MAX_DEFAULT_WORKERS)
    expect(defaultWorkers(1, '50000 100000')).toBe(1)
  })

  it('takes a count or auto, and says what is wrong otherwise', () => {
    expect(parseWorkers('3')).toBe(3)
    expect(parseWorkers(undefined, () => 5)).toBe(5)
    expect(parseWorkers('auto', () => 5)).toBe(5)
    for (const bad of ['0', '-1', '1.5', 'many', '1000']) expect(parseWorkers(bad)).toMatch(/--workers must be "auto" or a whole number from 1 to 256 \(got/)
  })
})
