import { describe, expect, it } from 'vitest'
import { assessReadiness, ReadinessState, startingError, STARTING_RETRY_AFTER_SECONDS } from './readiness.ts'

describe('readiness', () => {
  it('is not ready while booting, without gateway keys, or without a provider, and says which', () => {
    expect(assessReadiness({ booted: false, gatewayKeys: 'postgres', providers: 0 })).toMatchObject({ ready: false, starting: [expect.stringContaining('starting')] })
    const noKeys = assessReadiness({ booted: true, gatewayKeys: null, providers: 2 })
    expect(noKeys.ready).toBe(false)
    expect(noKeys.starting.join(' ')).toMatch(/gateway keys not loaded yet/)
    const noProviders = assessReadiness({ booted: true, gatewayKeys: 'postgres', providers: 0 })
    expect(noProviders.ready).toBe(false)
    expect(noProviders.starting.join(' ')).toMatch(/no providers yet/)
  })

  it('is ready with keys from Postgres or a peer, and ready but degraded with config.json\'s keys only', () => {
    expect(assessReadiness({ booted: true, gatewayKeys: 'postgres', providers: 1 })).toEqual({ ready: true, starting: [], degraded: [] })
    expect(assessReadiness({ booted: true, gatewayKeys: 'peer', providers: 1 })).toEqual({ ready: true, starting: [], degraded: [] })
    const fromConfig = assessReadiness({ booted: true, gatewayKeys: 'config', providers: 1 })
    expect(fromConfig.ready).toBe(true)
    expect(fromConfig.degraded.join(' ')).toMatch(/config\.json only/)
  })

  it('keeps its decision current as facts arrive', () => {
    const state = new ReadinessState()
    expect(state.ready).toBe(false)
    state.update({ booted: true, providers: 1 })
    expect(state.ready).toBe(false)
    state.update({ gatewayKeys: 'peer' })
    expect(state.ready).toBe(true)
    expect(state.current()).toEqual({ booted: true, gatewayKeys: 'peer', providers: 1 })
  })

  it('answers inference while starting with a 503 gateway_starting that says why and when to retry', () => {
    const error = startingError(assessReadiness({ booted: true, gatewayKeys: null, providers: 1 }))
    expect(error).toMatchObject({ code: 'gateway_starting', status: 503, retryAfterSeconds: STARTING_RETRY_AFTER_SECONDS })
    expect(error.message).toMatch(/gateway keys not loaded yet/)
  })
})
