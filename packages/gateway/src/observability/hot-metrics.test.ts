import { describe, expect, it } from 'vitest'
import { Counter, Histogram, Registry } from 'prom-client'
import { HotCounter, HotHistogram } from './hot-metrics.ts'

/** The same observations through prom-client's own metric and ours must render the same /metrics text. */
describe('hot metrics', () => {
  it('render exactly what prom-client renders for the same counts', async () => {
    const theirs = new Registry()
    const ours = new Registry()
    const counterTheirs = new Counter({ name: 'x_requests_total', help: 'Requests, by provider and status', labelNames: ['provider', 'status'], registers: [theirs] })
    const counterOurs = new HotCounter('x_requests_total', 'Requests, by provider and status', ['provider', 'status'], ours)
    const buckets = [0.05, 0.1, 0.25, 1]
    const histogramTheirs = new Histogram({ name: 'x_latency_seconds', help: 'Latency', labelNames: ['provider'], buckets, registers: [theirs] })
    const histogramOurs = new HotHistogram('x_latency_seconds', 'Latency', ['provider'], buckets, ours)
    const samples: [string, string, number][] = [['openai', '200', 0.03], ['openai', '200', 0.2], ['azure', '429', 0.1], ['openai', '500', 3], ['azure', '429', 0.05], ['név "é"', '200', 1]]
    for (const [provider, status, seconds] of samples) {
      for (const [counter, histogram] of [[counterTheirs, histogramTheirs], [counterOurs, histogramOurs]] as const) {
        counter.inc({ provider, status })
        histogram.observe({ provider }, seconds)
      }
    }
    counterTheirs.inc({ provider: 'openai', status: '200' }, 5)
    counterOurs.inc({ provider: 'openai', status: '200' }, 5)
    expect(await ours.metrics()).toBe(await theirs.metrics())
    counterOurs.reset()
    histogramOurs.reset()
    expect(await ours.metrics()).not.toContain('openai')
  })
})
