// The admin API, called the way a script would: same paths, bearer token, JSON with its content type.
import { useEffect, useState } from 'preact/hooks'

const TOKEN_KEY = 'switchboard.admin-token'

/** The admin token of this tab (sessionStorage: it goes when the tab closes). */
export const token = () => sessionStorage.getItem(TOKEN_KEY)

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value)
  else sessionStorage.removeItem(TOKEN_KEY)
  window.dispatchEvent(new Event('sb:token'))
}

/** An answer other than 2xx, with the API's own code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** Calls the API; throws ApiError with the API's message on failure. A 401 asks for a token. */
export async function api(method, path, body) {
  const headers = { accept: 'application/json' }
  const current = token()
  if (current) headers.authorization = `Bearer ${current}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let response
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch (error) {
    throw new ApiError(0, 'unreachable', `This node did not answer (${error.message}).`)
  }
  const text = await response.text()
  let data = null
  try {
    data = text === '' ? null : JSON.parse(text)
  } catch {
    data = null
  }
  if (!response.ok) {
    if (response.status === 401) window.dispatchEvent(new Event('sb:unauthorized'))
    throw new ApiError(response.status, data?.error?.code ?? null, data?.error?.message ?? `${method} ${path} answered ${response.status}`)
  }
  return data
}

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
