// The route and the API queries as plain functions (no Preact), so boot.js can ask for the
// page's data before the views have loaded, with the very URLs the views will ask for.

export const PAGES = ['dashboard', 'incidents', 'logs', 'settings', 'providers', 'cluster']

export function parseRoute(hash = location.hash) {
  const [pathPart, queryPart = ''] = hash.replace(/^#\/?/, '').split('?')
  const [page, ...rest] = pathPart.split('/')
  return {
    page: PAGES.includes(page) ? page : 'dashboard',
    id: rest.length > 0 ? decodeURIComponent(rest.join('/')) : null,
    params: Object.fromEntries(new URLSearchParams(queryPart)),
  }
}

/** The windows of the picker; `custom` takes `from` and `to` params. */
export const WINDOWS = { '1h': 3600, '6h': 6 * 3600, '24h': 24 * 3600, '7d': 7 * 24 * 3600 }

/** The window of the route as unix seconds. `now` is passed in so Live mode can move it. */
export function windowOf(params, now) {
  const name = params.window ?? '24h'
  if (name === 'custom' && params.from && params.to) {
    return { name, from: Math.floor(Date.parse(params.from) / 1000), to: Math.floor(Date.parse(params.to) / 1000) }
  }
  const span = WINDOWS[name] ?? WINDOWS['24h']
  const to = Math.floor(now / 1000)
  return { name: WINDOWS[name] ? name : '24h', from: to - span, to }
}

/** Builds `path?query` from an object, leaving out empty values. */
export function withQuery(path, query) {
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
export function dashboardPaths(params, window) {
  const filters = { from: window.from, to: window.to, providers: params.providers, models: params.models }
  return { summary: withQuery(SUMMARY_PATH, filters), timeline: withQuery(TIMELINE_PATH, filters), conditions: CONDITIONS_PATH, routes: ROUTES_PATH }
}
