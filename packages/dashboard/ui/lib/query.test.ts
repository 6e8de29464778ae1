import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import { customWindowParams, dashboardPaths, isLive, localInput, mergeParams, pageHref, parseRoute, questionWindow, routeHash, windowOf, withQuery } from './query.js'

const NOW = Date.parse('2025-03-01T12:00:00Z')

describe('parseRoute', () => {
  it('reads the page, the item and the params of the hash', () => {
    expect(parseRoute('#/incidents/inc%2F7?window=6h&statuses=attention,waiting')).toEqual({ page: 'incidents', id: 'inc/7', params: { window: '6h', statuses: 'attention,waiting' } })
    expect(parseRoute('#logs')).toEqual({ page: 'logs', id: null, params: {} })
  })

  it('falls back to the dashboard for an empty hash or an unknown page', () => {
    expect(parseRoute('')).toEqual({ page: 'dashboard', id: null, params: {} })
    expect(parseRoute('#/')).toEqual({ page: 'dashboard', id: null, params: {} })
    expect(parseRoute('#/nope?x=1')).toEqual({ page: 'dashboard', id: null, params: { x: '1' } })
    expect(parseRoute('#/constructor').page).toBe('dashboard')
  })

  it('reads bad query strings without throwing: empty pairs, a lone %, a repeated name (the last wins)', () => {
    expect(parseRoute('#/logs?&&=&a').params).toEqual({ '': '', a: '' })
    expect(parseRoute('#/logs?search=%').params).toEqual({ search: '%' })
    expect(parseRoute('#/logs?a=1&a=2').params).toEqual({ a: '2' })
    expect(parseRoute('#/logs?search=a+b%20c').params).toEqual({ search: 'a b c' })
  })

  it('keeps an id that is not percent-encoding as it stands (regression: it threw, and the page and boot.js with it)', () => {
    expect(parseRoute('#/incidents/%E0%A4%A?x=1')).toEqual({ page: 'incidents', id: '%E0%A4%A', params: { x: '1' } })
  })
})

describe('mergeParams and routeHash', () => {
  it('merge changes, dropping null, undefined and empty ones, and keep the rest', () => {
    expect(mergeParams({ window: '6h', live: '0' }, { live: null, sort: 'newest', search: '', offset: 0, flag: false })).toEqual({ window: '6h', sort: 'newest', offset: '0', flag: 'false' })
  })

  it('write a hash parseRoute reads back as it was', () => {
    expect(routeHash('incidents', 'a b/c', { q: 'x&y' })).toBe('#/incidents/a%20b%2Fc?q=x%26y')
    expect(routeHash('logs', null, {})).toBe('#/logs')
    fc.assert(fc.property(
      fc.constantFrom('dashboard', 'incidents', 'logs', 'settings', 'providers', 'cluster'),
      fc.option(fc.string({ minLength: 1 }), { nil: null }),
      fc.dictionary(fc.string({ minLength: 1 }), fc.string()),
      (page, id, params) => {
        const route = parseRoute(routeHash(page, id, params))
        expect(route.page).toBe(page)
        expect(route.id).toBe(id)
        expect(route.params).toEqual({ ...params })
      },
    ))
  })

  it('keep the params on nav links', () => {
    expect(pageHref('logs', '#/incidents/7?window=6h&live=0')).toBe('#/logs?window=6h&live=0')
    expect(pageHref('logs', '#/incidents')).toBe('#/logs')
    expect(pageHref('logs', '')).toBe('#/logs')
  })
})

describe('windowOf', () => {
  it('is the last 24 hours unless the route names a window', () => {
    expect(windowOf({}, NOW)).toEqual({ name: '24h', from: NOW / 1000 - 86400, to: NOW / 1000 })
    expect(windowOf({ window: '1h' }, NOW + 999)).toEqual({ name: '1h', from: NOW / 1000 - 3600, to: NOW / 1000 })
    expect(windowOf({ window: '7d' }, NOW).from).toBe(NOW / 1000 - 7 * 86400)
  })

  it('reads an unknown window as the default (regression: "constructor" found Object.prototype\'s and made NaN times)', () => {
    expect(windowOf({ window: 'fortnight' }, NOW)).toEqual({ name: '24h', from: NOW / 1000 - 86400, to: NOW / 1000 })
    expect(windowOf({ window: 'constructor' }, NOW)).toEqual({ name: '24h', from: NOW / 1000 - 86400, to: NOW / 1000 })
    expect(windowOf({ window: '' }, NOW).name).toBe('24h')
  })

  it('takes a custom window\'s times, and the default when one is missing or not a time', () => {
    expect(windowOf({ window: 'custom', from: '2025-03-01T10:00Z', to: '2025-03-01T11:30Z' }, NOW)).toEqual({ name: 'custom', from: Date.parse('2025-03-01T10:00Z') / 1000, to: Date.parse('2025-03-01T11:30Z') / 1000 })
    expect(windowOf({ window: 'custom', from: '2025-03-01T10:00Z' }, NOW).name).toBe('24h')
    const garbage = windowOf({ window: 'custom', from: 'soon', to: 'later' }, NOW)
    expect(garbage).toEqual({ name: '24h', from: NOW / 1000 - 86400, to: NOW / 1000 })
  })

  it('is live unless turned off or custom', () => {
    expect(isLive({})).toBe(true)
    expect(isLive({ live: '0' })).toBe(false)
    expect(isLive({ live: '1', window: 'custom' })).toBe(false)
  })

  it('names its question without the clock for a named window, by its times for a custom one', () => {
    expect(questionWindow({ name: '6h', from: 1, to: 2 })).toEqual({ from: '6h', to: null })
    expect(questionWindow({ name: 'custom', from: 1, to: 2 })).toEqual({ from: 1, to: 2 })
  })
})

describe('a custom window in local time', () => {
  // Away from UTC, so a window written in UTC and read back in local time moves (it did).
  beforeAll(() => {
    vi.stubEnv('TZ', 'America/New_York')
  })
  afterAll(() => {
    vi.unstubAllEnvs()
  })

  it('writes an instant as a datetime-local value, in local time, to the minute', () => {
    expect(new Date(NOW).getTimezoneOffset()).toBe(300)
    expect(localInput(NOW)).toBe('2025-03-01T07:00')
    expect(localInput(NOW / 1000 + 59)).toBe('2025-03-01T07:00')
    expect(localInput('2025-03-01T12:34:00Z')).toBe('2025-03-01T07:34')
  })

  it('turns a window into a custom one of the same times (regression: the picker wrote UTC, and the window moved by the zone\'s offset)', () => {
    const window = windowOf({ window: '6h' }, NOW)
    const params = customWindowParams(window)
    expect(params).toEqual({ window: 'custom', from: '2025-03-01T01:00', to: '2025-03-01T07:00', live: null })
    expect(windowOf({ window: params.window, from: params.from, to: params.to }, 0)).toEqual({ name: 'custom', from: window.from, to: window.to })
  })
})

describe('withQuery', () => {
  it('leaves out empty values and joins lists', () => {
    expect(withQuery('/api/logs', {})).toBe('/api/logs')
    expect(withQuery('/api/logs', { a: undefined, b: null, c: '', d: [] })).toBe('/api/logs')
    expect(withQuery('/api/logs', { offset: 0, stream: false, providers: ['openai', 'azure'] })).toBe('/api/logs?offset=0&stream=false&providers=openai%2Cazure')
    expect(withQuery('/api/logs', { search: 'a&b=c d' })).toBe('/api/logs?search=a%26b%3Dc+d')
  })

  it('asks the dashboard\'s questions in the window, with its filters', () => {
    const paths = dashboardPaths({ providers: 'openai', ignored: 'x' }, { name: '1h', from: 100, to: 3700 })
    expect(paths).toEqual({
      summary: '/api/adaptive-routing/history/summary?from=100&to=3700&providers=openai',
      timeline: '/api/adaptive-routing/history/timeline?from=100&to=3700&providers=openai',
      conditions: '/api/adaptive-routing/conditions',
      routes: '/api/adaptive-routing/routes',
    })
  })
})
