/**
 * Every answer of the issues API's parameters the reference fixes ("Listing incidents through
 * the API"): the 400s (negative offset, unknown sort) and ours (a time that is neither RFC 3339
 * nor unix seconds, a window that ends before it starts, an offset that is not a whole number,
 * an unknown status, state or scope), the limit's default, fallback and cap, and past the end.
 */
import { describe, expect, it } from 'vitest'
import type { GroupedIncident } from '../incidents/group.ts'
import { answerIssues, DEFAULT_LIMIT, MAX_LIMIT, parseIssueFilters } from './issues.ts'
import { HistoryQueryError, parseWindow } from './params.ts'

const NOW = Date.parse('2026-12-01T13:00:00Z')
const query = (text: string) => new URLSearchParams(text)

/** The error a parse throws, or a failure when it throws none. */
function refusal(parse: () => unknown): HistoryQueryError {
  try {
    parse()
  } catch (error) {
    expect(error).toBeInstanceOf(HistoryQueryError)
    return error as HistoryQueryError
  }
  throw new Error('expected a 400')
}

describe('issues API parameters', () => {
  it('answers 400 for a negative or broken offset and an unknown sort, naming the parameter', () => {
    for (const [text, param] of [
      ['offset=-1', 'offset'],
      ['limit=10&offset=-25', 'offset'],
      ['offset=x', 'offset'],
      ['offset=1.5', 'offset'],
      ['sort=loudest', 'sort'],
      ['sort=PRIORITY', 'sort'],
      ['statuses=attention,broken', 'statuses'],
      ['states=on_fire', 'states'],
      ['scopes=provider', 'scopes'],
    ] as const) {
      const error = refusal(() => parseIssueFilters(query(text)))
      expect(error, text).toMatchObject({ param, status: 400, code: 'invalid_history_query' })
      expect(error.message.length, text).toBeGreaterThan(20)
    }
    // Every sort of the reference is accepted.
    for (const sort of ['priority', 'newest', 'oldest', 'longest', 'shortest']) expect(parseIssueFilters(query(`sort=${sort}`)).sort).toBe(sort)
  })

  it('answers 400 for a from or to that is neither RFC 3339 nor unix seconds, and for a window that ends before it starts', () => {
    for (const [text, param] of [
      ['from=yesterday', 'from'],
      ['from=2026-12-01', 'from'],
      ['from=2026-13-01T00:00:00Z', 'from'],
      ['from=2026-12-01T10:00:00', 'from'],
      ['to=soon', 'to'],
      ['to=1764590400s', 'to'],
      ['from=2000&to=1000', 'from'],
      ['from=2026-12-01T12:00:00Z&to=2026-12-01T11:00:00Z', 'from'],
    ] as const) {
      const error = refusal(() => parseWindow(query(text), NOW))
      expect(error, text).toMatchObject({ param, status: 400 })
      expect(error.message, text).toMatch(param === 'from' && text.includes('to=') ? /after to/ : /RFC 3339/)
    }
  })

  it('reads RFC 3339 (any offset) and unix seconds, and defaults to the last 24 hours', () => {
    expect(parseWindow(query('from=1764590400&to=1764594000.5'), NOW)).toEqual({ from: 1764590400_000, to: 1764594000_500 })
    expect(parseWindow(query('from=2026-12-01T12:00:00%2B02:00&to=2026-12-01t12:30:00.250Z'), NOW)).toEqual({ from: Date.parse('2026-12-01T10:00:00Z'), to: Date.parse('2026-12-01T12:30:00.250Z') })
    expect(parseWindow(query(''), NOW)).toEqual({ from: NOW - 86_400_000, to: NOW })
    expect(parseWindow(query('to=2026-12-01T12:00:00Z'), NOW)).toEqual({ from: Date.parse('2026-11-30T12:00:00Z'), to: Date.parse('2026-12-01T12:00:00Z') })
  })

  it('falls back to a limit of 25 for anything that is not a positive whole number, and caps it at 100', () => {
    const limit = (text: string) => parseIssueFilters(query(text)).page?.limit
    expect(limit('')).toBeUndefined()
    expect(parseIssueFilters(query('')).page).toBeNull()
    for (const text of ['offset=0', 'limit=', 'limit=abc', 'limit=0', 'limit=-3', 'limit=2.5', 'limit=Infinity']) expect(limit(text), text).toBe(DEFAULT_LIMIT)
    expect(limit('limit=7')).toBe(7)
    expect(limit('limit=100')).toBe(MAX_LIMIT)
    expect(limit('limit=1000')).toBe(MAX_LIMIT)
    expect(parseIssueFilters(query('limit=10&offset=')).page).toEqual({ limit: 10, offset: 0 })
  })

  it('answers the last page for an offset past the end, and offset 0 when nothing matches', () => {
    const incidents = Array.from({ length: 7 }, (_, index): GroupedIncident => {
      const openedMs = NOW - (index + 1) * 60_000
      return {
        incident: { id: `inc_${index}`, entity: `route:p:m:k${index}`, scope: 'route', provider: 'p', models: ['m'], key_ids: [`k${index}`], status: 'resolved', worst_state: 'degraded', reasons: ['transient'], opened_at: new Date(openedMs).toISOString(), closed_at: new Date(openedMs + 30_000).toISOString(), duration_seconds: 30, nodes: ['a'], regions: ['eu'], checks: 0, requests_failed: 0, pinned_kept_failed: 0, action: 'reduced_traffic' },
        episodes: [],
        openedMs,
        closedMs: openedMs + 30_000,
      }
    })
    const ask = (text: string) => answerIssues(incidents, parseIssueFilters(query(text)), { from: NOW - 3_600_000, to: NOW }, () => undefined)
    expect(ask('limit=3&offset=999')).toMatchObject({ total: 7, offset: 6, limit: 3 })
    expect(ask('limit=3&offset=999').issues.map((issue) => issue.id)).toEqual(['inc_6'])
    expect(ask('limit=3&offset=6').offset).toBe(6)
    expect(ask('limit=3&offset=5').issues.map((issue) => issue.id)).toEqual(['inc_5', 'inc_6'])
    expect(ask('providers=nobody&limit=3&offset=40')).toMatchObject({ total: 0, offset: 0, issues: [] })
  })
})
