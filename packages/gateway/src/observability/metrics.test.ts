import perfHooks from 'node:perf_hooks'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createMetrics, EVENT_LOOP_SAMPLE_MS } from './metrics.ts'

describe('the metrics of a node', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('n. names process metrics switchboard_process_*, never switchboard_process_process_*', async () => {
    const text = await createMetrics().registry.metrics()
    expect(text).toContain('switchboard_process_cpu_user_seconds_total')
    expect(text).not.toContain('switchboard_process_process_')
  })

  it('samples the event-loop lag every 100 ms, not every 10 ms (an idle node woke 100 times a second for it)', async () => {
    const monitor = vi.spyOn(perfHooks, 'monitorEventLoopDelay')
    const text = await createMetrics().registry.metrics()
    expect(EVENT_LOOP_SAMPLE_MS).toBe(100)
    expect(monitor).toHaveBeenCalledWith({ resolution: EVENT_LOOP_SAMPLE_MS })
    expect(text).toContain('switchboard_nodejs_eventloop_lag_p99_seconds')
  })
})
