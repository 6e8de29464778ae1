// Hash routing: #/<page>?<params>. The time window, Live mode and filters live in the params,
// so switching pages keeps the view and a link shares it.
import { useEffect, useState } from 'preact/hooks'
import { mergeParams, parseRoute, routeHash } from './query.js'

export { PAGES, parseRoute, WINDOWS, windowOf } from './query.js'

/** Goes to `page` (and `id`), merging `params` into the current ones (null removes one). */
export function navigate(/** @type {string} */ page, /** @type {Record<string, unknown>} */ params = {}, /** @type {string | null} */ id = null) {
  location.hash = routeHash(page, id, mergeParams(parseRoute().params, params))
}

/** The current route, following the hash. */
export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute())
  useEffect(() => {
    const onChange = () => setRoute(parseRoute())
    window.addEventListener('hashchange', onChange)
    return () => window.removeEventListener('hashchange', onChange)
  }, [])
  return route
}
