import { afterEach, describe, expect, it, vi } from 'vitest'
import pino from 'pino'
import { atMost, shutdownStep } from './shutdown.ts'

function recordingLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line).msg as string) })
  return { logger, lines }
}

describe('shutdownStep', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('leaves a step that never ends behind at its bound, and says so', async () => {
    vi.useFakeTimers()
    const { logger, lines } = recordingLogger()
    let finished = false
    const step = shutdownStep(logger, 'last snapshot', () => new Promise(() => {}), 5_000).then(() => {
      finished = true
    })
    await vi.advanceTimersByTimeAsync(2_000)
    expect(lines).toEqual(['shutdown: still waiting on last snapshot after 2 s'])
    expect(finished).toBe(false)
    await vi.advanceTimersByTimeAsync(3_000)
    await step
    expect(finished).toBe(true)
    expect(lines).toEqual(['shutdown: still waiting on last snapshot after 2 s', 'shutdown: gave up on last snapshot after 5 s'])
  })

  it('says nothing of a step that ends in time, and waits for it', async () => {
    vi.useFakeTimers()
    const { logger, lines } = recordingLogger()
    let ran = false
    const step = shutdownStep(logger, 'history flush', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      ran = true
    })
    await vi.advanceTimersByTimeAsync(1_500)
    await step
    expect(ran).toBe(true)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(lines).toEqual([])
  })
})

describe('atMost', () => {
  it('answers the work when it ends first, undefined at the bound', async () => {
    vi.useFakeTimers()
    expect(await atMost(1_000, Promise.resolve('written'))).toBe('written')
    const late = atMost(1_000, new Promise(() => {}))
    await vi.advanceTimersByTimeAsync(1_000)
    expect(await late).toBeUndefined()
    vi.useRealTimers()
  })
})
