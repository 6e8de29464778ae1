// The route and the API queries as plain functions (no Preact), so boot.js can ask for the
// page's data before the views have loaded, with the very URLs the views will ask for.

/** @typedef {{ page: string, id: string | null, params: Record<string, string> }} Route */
/** @typedef {{ name: string, from: number, to: number }} TimeWindow The route's window, in unix seconds. */
/** @typedef {Record<string, string | number | boolean | null | undefined | string[]>} QueryValues */

export const PAGES = ['dashboard', 'incidents', 'logs', 'settings', 'providers', 'cluster']

/** The page, the item and the params of a `#/<page>/<id>?<params>` hash; an unknown page is the dashboard. */
export function parseRoute(hash = location.hash) {
  const [pathPart = '', queryPart = ''] = hash.replace(/^#\/?/, '').split('?')
  const [page = '', ...rest] = pathPart.split('/')
  return /** @type {Route} */ ({
    page: PAGES.includes(page) ? page : 'dashboard',
    id: rest.length > 0 ? decoded(rest.join('/')) : null,
    params: Object.fromEntries(new URLSearchParams(queryPart)),
  })
}

/** A percent-encoded id as it was; one that is not valid encoding (a hand-edited link) as it stands. */
function decoded(/** @type {string} */ text) {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `current` with `changes` merged in: a null, undefined or empty value removes the param. */
export function mergeParams(/** @type {Record<string, string>} */ current, /** @type {Record<string, unknown>} */ changes) {
  const merged = { ...current }
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === '') delete merged[name]
    else merged[name] = String(value)
  }
  return merged
}

/** The hash of a page, its item (if any) and params, as parseRoute reads it back. */
export function routeHash(/** @type {string} */ page, /** @type {string | null} */ id, /** @type {Record<string, string>} */ params) {
  const query = new URLSearchParams(params).toString()
  return `#/${page}${id ? `/${encodeURIComponent(id)}` : ''}${query ? `?${query}` : ''}`
}

/** A nav link to `page` that keeps the current hash's params (the window, Live mode, filters). */
export function pageHref(/** @type {string} */ page, /** @type {string} */ hash) {
  return `#/${page}${hash.includes('?') ? `?${hash.split('?')[1]}` : ''}`
}

/** The windows of the picker; `custom` takes `from` and `to` params. */
export const WINDOWS = /** @type {Record<string, number>} */ ({ '1h': 3600, '6h': 6 * 3600, '24h': 24 * 3600, '7d': 7 * 24 * 3600 })

/** Live mode is on unless the URL turns it off (`live=0`) or the window is a fixed one (custom). */
export const isLive = (/** @type {Record<string, string>} */ params) => params.live !== '0' && params.window !== 'custom'

/** The window of the route as unix seconds. `now` (ms) is passed in so Live mode can move it. */
export function windowOf(/** @type {Record<string, string>} */ params, /** @type {number} */ now) {
  const name = params.window ?? '24h'
  if (name === 'custom' && params.from && params.to) {
    const from = Date.parse(params.from)
    const to = Date.parse(params.to)
    // A from or to that is not a time falls back to the default window, as a missing one does.
    if (!Number.isNaN(from) && !Number.isNaN(to)) return /** @type {TimeWindow} */ ({ name, from: Math.floor(from / 1000), to: Math.floor(to / 1000) })
  }
  // Own names only: `window=constructor` must not find Object.prototype's.
  const known = Object.hasOwn(WINDOWS, name)
  const span = known ? WINDOWS[name] ?? 0 : 24 * 3600
  const to = Math.floor(now / 1000)
  return /** @type {TimeWindow} */ ({ name: known ? name : '24h', from: to - span, to })
}

/**
 * An instant (unix seconds, ms, or an ISO string) as a datetime-local value: local time, to the
 * minute, the form windowOf reads a custom window's `from` and `to` in.
 */
export function localInput(/** @type {number | string} */ at) {
  const date = new Date(typeof at === 'number' ? (at < 1e12 ? at * 1000 : at) : Date.parse(at))
  const pad = (/** @type {number} */ value) => String(value).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}

/** The params that turn `window` into a custom window of the same times (Live mode goes with it). */
export const customWindowParams = (/** @type {TimeWindow} */ window) => ({ window: 'custom', from: localInput(window.from), to: localInput(window.to), live: null })

/** Builds `path?query` from an object, leaving out empty values; lists are comma-separated. */
export function withQuery(/** @type {string} */ path, /** @type {QueryValues} */ query) {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) continue
    params.set(name, Array.isArray(value) ? value.join(',') : String(value))
  }
  const text = params.toString()
  return text === '' ? path : `${path}?${text}`
}

export const SUMMARY_PATH = '/api/adaptive-routing/history/summary'
export const TIMELINE_PATH = '/api/adaptive-routing/history/timeline'
export const CONDITIONS_PATH = '/api/adaptive-routing/conditions'
export const ROUTES_PATH = '/api/adaptive-routing/routes'

/** What the dashboard asks for on load, in the route's window: the figures, the timeline, the held keys, the routes. */
export function dashboardPaths(/** @type {Record<string, string>} */ params, /** @type {TimeWindow} */ window) {
  const filters = { from: window.from, to: window.to, providers: params.providers, models: params.models }
  return { summary: withQuery(SUMMARY_PATH, filters), timeline: withQuery(TIMELINE_PATH, filters), conditions: CONDITIONS_PATH, routes: ROUTES_PATH }
}

/**
 * The window as a page's question names it, without the clock: a Live tick moves a named
 * window's times but not the question ("24h"), a custom window is its times.
 */
export function questionWindow(/** @type {TimeWindow} */ window) {
  return window.name === 'custom' ? { from: window.from, to: window.to } : { from: window.name, to: null }
}
