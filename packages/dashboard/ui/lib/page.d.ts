// What the shell (app.js) hands every page: the route, who this tab is, and the clock of the
// window. Types only, for the ui's JSDoc.
import type { ApiError } from './http.js'
import type { Route, TimeWindow } from './query.js'

/** Who this tab is to the API (GET /api/session), and whether it has been asked yet. */
export interface Session {
  role: 'view' | 'update' | null
  permissions?: string[] | undefined
  checked: boolean
  needsToken: boolean
  tokensRequired?: boolean | undefined
  error?: ApiError | undefined
}

/** The shell's state every page reads. */
export interface PageContext {
  route: Route
  session: Session
  /** Counts Live mode's ticks: a page refetches when it moves. */
  tick: number
  /** Counts reloads after a change: a page refetches when it moves. */
  version: number
  /** The clock the window was computed from (ms). */
  now: number
  window: TimeWindow
  live: boolean
  reload: () => void
}
