/**
 * The reference story on a fake clock (reference overview, "How adaptive routing works"): three
 * providers serve gpt-4o; one degrades (slow, some errors), another fails outright; traffic moves
 * off them within two recompute cycles and comes back after they recover. No sleeps: every time is
 * an argument.
 */
import { describe, expect, it } from 'vitest'
import { keyEngine } from '../../test/engine-fixture.ts'
import { RoutingLog } from '../planning/log.ts'
import { planRequest } from '../planning/request-plan.ts'
import { RECOMPUTE_INTERVAL_MS } from './tuning.ts'
import { defaultLoadBalancerSettings, type BalancerProvider } from './types.ts'
import type { FailureClass } from '../failures/failure-class.ts'

const MODEL = 'gpt-4o'
const providers: BalancerProvider[] = [
  { provider: 'openai', keys: ['o1', 'o2', 'o3'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) },
  { provider: 'azure', keys: ['a1', 'a2'].map((id) => ({ id, name: id, models: [MODEL], weight: 1 })) },
  { provider: 'groq', keys: [{ id: 'g1', name: 'g1', models: [MODEL], weight: 1 }] },
]

const FAULTS_FROM = 60_000
const FAULTS_UNTIL = 150_000
const REQUESTS_PER_CYCLE = 100

/** A small seeded generator (xorshift32), so the run is the same every time. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1
  return () => {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    return state / 4_294_967_296
  }
}

/** How each provider answers at `now`: azure is slow and fails one in five, groq fails every request. */
function upstream(provider: string, now: number, sequence: number): { failureClass: FailureClass | null; latencyMs: number } {
  const faulty = now >= FAULTS_FROM && now < FAULTS_UNTIL
  if (faulty && provider === 'groq') return { failureClass: 'transient', latencyMs: 200 }
  if (faulty && provider === 'azure') return { failureClass: sequence % 5 === 0 ? 'transient' : null, latencyMs: 3_000 }
  return { failureClass: null, latencyMs: 800 }
}

describe('the reference story', () => {
  it('moves traffic off a degraded and a failed provider within two cycles, and back after recovery', () => {
    const engine = keyEngine(providers)
    const balancer = engine.balancer
    const random = seeded(42)
    const cycles: { end: number; primary: Map<string, number>; served: number; groqSkipped: boolean }[] = []
    let sequence = 0
    for (let end = RECOMPUTE_INTERVAL_MS; end <= 300_000; end += RECOMPUTE_INTERVAL_MS) {
      const primary = new Map<string, number>()
      let served = 0
      let groqSkipped = false
      for (let request = 0; request < REQUESTS_PER_CYCLE; request++) {
        const now = end - RECOMPUTE_INTERVAL_MS + (request * RECOMPUTE_INTERVAL_MS) / REQUESTS_PER_CYCLE
        const log = new RoutingLog(false)
        const plan = planRequest(engine.planner, { model: MODEL, pinnedProvider: undefined, fallbacks: [], sessionId: null, directKey: false, settings: defaultLoadBalancerSettings, now, random, log })!
        const chosen = plan.targets[plan.primary]!.provider
        primary.set(chosen, (primary.get(chosen) ?? 0) + 1)
        groqSkipped ||= log.decision!.skipped.some((target) => target.provider === 'groq')
        // The gateway's part: try each target in order (a failed provider's trial first, when this request is it), one attempt each.
        for (const target of plan.targets) {
          const key = engine.firstKey(target.provider, target.model, random, { now, planned: target })!.key
          const route = { provider: target.provider, model: target.model, keyId: key.id }
          const answer = upstream(target.provider, now, sequence++)
          balancer.attemptStarted(route, now)
          balancer.attemptFinished({ ...route, ...answer, completionTokens: 50, now })
          if (answer.failureClass === null) {
            served++
            break
          }
        }
      }
      balancer.recompute(end)
      cycles.push({ end, primary, served, groqSkipped })
    }
    const share = (provider: string, from: number, until: number) => {
      const window = cycles.filter((cycle) => cycle.end > from && cycle.end <= until)
      const picks = window.reduce((sum, cycle) => sum + (cycle.primary.get(provider) ?? 0), 0)
      return picks / (window.length * REQUESTS_PER_CYCLE)
    }
    const cycle = RECOMPUTE_INTERVAL_MS

    // Before: all three healthy and sharing the model.
    for (const provider of ['openai', 'azure', 'groq']) expect(share(provider, 0, FAULTS_FROM)).toBeGreaterThan(0.25)

    // Within two cycles of the faults, groq is out (left out of selection) and azure gets only probes.
    expect(cycles.find((entry) => entry.end === FAULTS_FROM + 2 * cycle)!.groqSkipped).toBe(true)
    expect(share('groq', FAULTS_FROM + 2 * cycle, FAULTS_UNTIL)).toBeLessThan(0.03)
    expect(share('azure', FAULTS_FROM + 2 * cycle, FAULTS_UNTIL)).toBeLessThan(0.1)
    expect(share('openai', FAULTS_FROM + 2 * cycle, FAULTS_UNTIL)).toBeGreaterThan(0.85)
    // Every request is still served, by the fallbacks lined up behind the primary.
    for (const entry of cycles) expect(entry.served).toBe(REQUESTS_PER_CYCLE)

    // After the providers recover, both climb back to a fair share.
    const settled = FAULTS_UNTIL + 90_000
    expect(share('groq', settled, 300_000)).toBeGreaterThan(0.25)
    expect(share('azure', settled, 300_000)).toBeGreaterThan(0.25)
    expect(balancer.routes().filter((route) => route.model === MODEL).every((route) => route.state === 'healthy')).toBe(true)
  })
})
