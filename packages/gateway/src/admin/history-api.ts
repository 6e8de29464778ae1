/**
 * The history API (issue 14) under /api: incidents, one incident with its story, and the
 * dashboard's summary, timeline and scores (docs/api.md), all read from Postgres.
 */
import { Hono, type Context } from 'hono'
import type { HonoEnv } from './auth.ts'
import { HistoryQueryError, type HistoryQueries } from '@switchboard/history'
import { fromStore, GatewayError } from '../errors.ts'

const UNAVAILABLE = 'PostgreSQL is not answering, so routing history cannot be read right now; retry shortly. Routing goes on, and what it records waits in memory until Postgres is back.'

/** The routes, mounted under /api. `queries` is null while history could not start (Postgres away at boot). */
export function historyApi(queries: () => HistoryQueries | null): Hono<HonoEnv> {
  const api = new Hono<HonoEnv>()
  const answer = (read: (history: HistoryQueries, query: URLSearchParams, context: Context<HonoEnv>) => Promise<unknown>) => async (context: Context<HonoEnv>) => {
    const history = queries()
    if (history === null) throw new GatewayError('not_found', 'History is not recording on this node (history_enabled is off, or Postgres was away when it started).')
    const query = new URL(context.req.url).searchParams
    return context.json((await fromStore(() => read(history, query, context), UNAVAILABLE, HistoryQueryError)) as object)
  }
  api.get('/adaptive-routing/history/issues', answer((history, query) => history.issues(query)))
  api.get(
    '/adaptive-routing/history/issues/:id',
    answer(async (history, query, context) => {
      const id = context.req.param('id') ?? ''
      const found = await history.issue(id, query)
      if (found === null) throw new GatewayError('not_found', `No incident "${id}" in the window; list them with GET /api/adaptive-routing/history/issues (widen it with from and to).`)
      return found
    }),
  )
  api.get('/adaptive-routing/history/summary', answer((history, query) => history.summary(query)))
  api.get('/adaptive-routing/history/timeline', answer((history, query) => history.timeline(query)))
  api.get('/adaptive-routing/history/scores', answer((history, query) => history.scores(query)))
  return api
}
