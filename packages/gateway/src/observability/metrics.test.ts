import { describe, expect, it } from 'vitest'
import { createMetrics } from './metrics.ts'

describe('the metrics of a node', () => {
  it('n. names process metrics switchboard_process_*, never switchboard_process_process_*', async () => {
    const text = await createMetrics().registry.metrics()
    expect(text).toContain('switchboard_process_cpu_user_seconds_total')
    expect(text).not.toContain('switchboard_process_process_')
  })
})
