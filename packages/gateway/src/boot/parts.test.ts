import { afterEach, describe, expect, it, vi } from 'vitest'
import pino from 'pino'
import { Parts } from './parts.ts'

afterEach(() => {
  vi.useRealTimers()
})

const quiet = () => {
  const lines: string[] = []
  const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line).msg as string) })
  return { logger, lines }
}

describe('the parts of a node', () => {
  it('stop in reverse order of start, each once', async () => {
    const { logger } = quiet()
    const parts = new Parts(logger)
    const stopped: string[] = []
    for (const name of ['database', 'pool', 'queue', 'fleet']) parts.add(name, () => void stopped.push(name))
    await parts.stop()
    await parts.stop()
    expect(stopped).toEqual(['fleet', 'queue', 'pool', 'database'])
  })

  it('go on past a part that hangs, once its bound is reached, and past one that throws', async () => {
    vi.useFakeTimers()
    const { logger, lines } = quiet()
    const parts = new Parts(logger)
    const stopped: string[] = []
    parts.add('database', () => void stopped.push('database'))
    parts.add('broken', () => {
      throw new Error('no')
    })
    parts.add('hanging', () => new Promise(() => {}), 1_000)
    const stopping = parts.stop()
    await vi.advanceTimersByTimeAsync(1_000)
    await stopping
    expect(stopped).toEqual(['database'])
    expect(lines).toContain('shutdown: gave up on hanging after 1 s')
    expect(lines).toContain('shutdown: broken failed')
  })
})
