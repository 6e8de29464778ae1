// The admin API, called the way a script would: same paths, bearer token, JSON with its content type.
import { useEffect, useState } from 'preact/hooks'
import { api } from './http.js'

export { api, ApiError, setToken, token } from './http.js'
export { withQuery } from './query.js'

/**
 * GETs `path` (when it is not null) and again whenever one of `deps` changes; keeps the last
 * answer while a new one loads, so live mode does not flash. `current` says whether `data`
 * answers this `path`: after a filter or window change the previous answer stays on screen
 * until the new one is in, and a page marks it as out of date rather than pass it off as
 * the new filter's answer. `query` names the question without the clock (Live mode moves the
 * window's times every tick without changing the question); it defaults to `path`.
 */
export function useApi(path, deps = [], query = path) {
  const [state, setState] = useState({ data: undefined, error: undefined, loading: path !== null, query: null })
  useEffect(() => {
    if (path === null) return undefined
    let cancelled = false
    setState((previous) => ({ ...previous, loading: true }))
    api('GET', path).then(
      (data) => !cancelled && setState({ data, error: undefined, loading: false, query }),
      (error) => !cancelled && setState((previous) => ({ data: error.status === 404 ? undefined : previous.data, error, loading: false, query: previous.query })),
    )
    return () => {
      cancelled = true
    }
  }, [path, ...deps])
  return { ...state, current: state.data !== undefined && state.query === query }
}
