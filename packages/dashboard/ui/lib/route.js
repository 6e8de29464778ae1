// Hash routing: #/<page>?<params>. The time window, Live mode and filters live in the params,
// so switching pages keeps the view and a link shares it.
import { useEffect, useState } from 'preact/hooks'
import { parseRoute } from './query.js'

export { PAGES, parseRoute, WINDOWS, windowOf } from './query.js'

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
