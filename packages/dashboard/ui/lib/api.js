// The admin API, called the way a script would: same paths, bearer token, JSON with its content type.
import { useEffect, useState } from 'preact/hooks'
import { ApiError, api } from './http.js'

export { api, ApiError, setToken, token } from './http.js'
export { withQuery } from './query.js'

/**
 * The state of one GET: the last answer, the last failure, and whether `data` answers the
 * question asked now (`current`).
 * @template T
 * @typedef {{ data: T | undefined, error: ApiError | undefined, loading: boolean, query: string | null, current: boolean }} ApiState
 */

/**
 * GETs `path` (when it is not null) and again whenever one of `deps` changes; keeps the last
 * answer while a new one loads, so live mode does not flash. `current` says whether `data`
 * answers this `path`: after a filter or window change the previous answer stays on screen
 * until the new one is in, and a page marks it as out of date rather than pass it off as
 * the new filter's answer. `query` names the question without the clock (Live mode moves the
 * window's times every tick without changing the question); it defaults to `path`.
 * The caller names the answer's type T by the type of the variable it assigns to.
 * @template T
 * @param {string | null} path
 * @param {unknown[]} [deps]
 * @param {string | null} [query]
 * @returns {ApiState<T>}
 */
export function useApi(path, deps = [], query = path) {
  const [state, setState] = useState(/** @type {Omit<ApiState<T>, 'current'>} */ ({ data: undefined, error: undefined, loading: path !== null, query: null }))
  useEffect(() => {
    if (path === null) return undefined
    let cancelled = false
    setState((previous) => ({ ...previous, loading: true }))
    api('GET', path).then(
      (data) => !cancelled && setState({ data: /** @type {T} */ (data), error: undefined, loading: false, query }),
      (/** @type {unknown} */ failure) => {
        if (cancelled) return
        const error = failure instanceof ApiError ? failure : new ApiError(0, null, failure instanceof Error ? failure.message : String(failure))
        setState((previous) => ({ data: error.status === 404 ? undefined : previous.data, error, loading: false, query: previous.query }))
      },
    )
    return () => {
      cancelled = true
    }
  }, [path, ...deps])
  return { ...state, current: state.data !== undefined && state.query === query }
}
