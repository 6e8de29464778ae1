// Hash routing: #/<page>?<params>. The time window, Live mode and filters live in the params,
// so switching pages keeps the view and a link shares it.
import { useEffect, useState } from 'preact/hooks'

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

/** Goes to `page` (and `id`), merging `params` into the current ones (null removes one). */
export function navigate(page, params = {}, id = null) {
  const current = parseRoute()
  const merged = { ...current.params }
  for (const [name, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === '') delete merged[name]
    else merged[name] = String(value)
  }
  const query = new URLSearchParams(merged).toString()
  location.hash = `#/${page}${id ? `/${encodeURIComponent(id)}` : ''}${query ? `?${query}` : ''}`
}

export function useRoute() {
  const [route, setRoute] = useState(parseRoute)
  useEffect(() => {
    const onChange = () => setRoute(parseRoute())
    window.addEventListener('hashchange', onChange)
    return () => window.removeEventListener('hashchange', onChange)
  }, [])
  return route
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
