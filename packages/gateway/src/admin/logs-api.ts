/** The request log API (issue 15): `GET /api/logs` (a filtered page with facets) and `GET /api/logs/:id`, read from Postgres. */
import { Hono } from 'hono'
import type { HonoEnv } from './auth.ts'
import { historyLink, HistoryQueryError, parseLogQuery, type LogPage, type LogQuery, type RequestRecord } from '@switchboard/history'
import { fromStore, GatewayError } from '../errors.ts'

export interface LogsApiComponents {
  /** The fleet's request log in Postgres (`searchLogs`, `readLog` of @switchboard/history on the node's pool). */
  logs: { search(query: LogQuery): Promise<LogPage>; read(id: string): Promise<RequestRecord | null> }
  now(): number
  /** False when `request_log.enabled` is off on this node (its answers then say so). */
  enabled(): boolean
}

/** The routes, mounted under /api. */
export function logsApi(components: LogsApiComponents): Hono<HonoEnv> {
  const api = new Hono<HonoEnv>()

  api.get('/logs', async (context) => {
    const query = await checked(async () => parseLogQuery(context.req.query(), components.now()))
    const page = await checked(() => components.logs.search(query))
    return context.json(components.enabled() ? page : { ...page, request_log_enabled: false })
  })

  api.get('/logs/:id', async (context) => {
    const id = context.req.param('id')
    const entry = await checked(() => components.logs.read(id))
    if (entry === null) throw new GatewayError('log_not_found', `No request ${id} in the request log: it is older than the retention, was dropped while Postgres lagged, or its node has not written it yet (within a second or two).`)
    return context.json({ ...entry, history: historyLink(entry) })
  })

  return api
}

/** Runs `work`, answering a parameter it refuses as a 400 naming that parameter, and Postgres away as a 503. */
const checked = <Result>(work: () => Promise<Result>) =>
  fromStore(work, 'PostgreSQL is not answering, so the request log cannot be read right now; retry shortly. Requests are still served, and their rows wait in the node\'s buffer until it is back (past the buffer they are dropped and counted in /metrics).', HistoryQueryError)
