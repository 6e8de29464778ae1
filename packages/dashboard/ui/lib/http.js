// The admin API, called the way a script would: same paths, bearer token, JSON with its content
// type. No Preact here: boot.js uses it before the views load.

const TOKEN_KEY = 'switchboard.admin-token'

/** The admin token of this tab (sessionStorage: it goes when the tab closes). */
export const token = () => sessionStorage.getItem(TOKEN_KEY)

/** Keeps `value` as this tab's admin token (an empty one signs out) and tells the page. */
export function setToken(/** @type {string | null} */ value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value)
  else sessionStorage.removeItem(TOKEN_KEY)
  window.dispatchEvent(new Event('sb:token'))
}

/** An answer other than 2xx, with the API's own code and message. */
export class ApiError extends Error {
  /**
   * @param {number} status the HTTP status; 0 when the node did not answer
   * @param {string | null} code the API's error code
   * @param {string} message the API's message
   */
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** What a caught failure says (an ApiError's message is the API's own). */
export const errorText = (/** @type {unknown} */ error) => (error instanceof Error ? error.message : String(error))

/**
 * GETs boot.js started before the views loaded: path -> { answer, at, token }. Each is used once, and only while fresh.
 * @type {Map<string, { answer: Promise<unknown>, at: number, token: string | null }>}
 */
const early = new Map()
const EARLY_FRESH_MS = 10_000
/** @type {number | null} */
let bootedAt = null

/** Starts the GETs of `paths` now, for the views to pick up; `now` is the clock the views start from. */
export function prefetch(/** @type {string[]} */ paths, /** @type {number} */ now) {
  bootedAt = now
  for (const path of paths) {
    const answer = request('GET', path)
    answer.catch(() => {}) // whoever takes it sees the failure; an answer nobody takes is not an error
    early.set(path, { answer, at: now, token: token() })
  }
}

/** The time boot.js started from (so the views ask for the same window), else now. */
export const bootTime = () => bootedAt ?? Date.now()

/**
 * Calls the API; throws ApiError with the API's message on failure. A 401 asks for a token.
 * The answer is the API's JSON as it came: the caller names its type (answers.d.ts).
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<unknown>}
 */
export function api(method, path, body) {
  if (method === 'GET' && body === undefined) {
    const started = early.get(path)
    if (started !== undefined) {
      early.delete(path)
      if (Date.now() - started.at < EARLY_FRESH_MS && started.token === token()) return started.answer
    }
  }
  return request(method, path, body)
}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 */
async function request(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' }
  const current = token()
  if (current) headers.authorization = `Bearer ${current}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let response
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch (error) {
    throw new ApiError(0, 'unreachable', `This node did not answer (${error instanceof Error ? error.message : String(error)}).`)
  }
  const text = await response.text()
  /** @type {unknown} */
  let data = null
  try {
    data = text === '' ? null : JSON.parse(text)
  } catch {
    data = null
  }
  if (!response.ok) {
    if (response.status === 401) window.dispatchEvent(new Event('sb:unauthorized'))
    const failure = /** @type {{ error?: { code?: string, message?: string } } | null} */ (data)
    throw new ApiError(response.status, failure?.error?.code ?? null, failure?.error?.message ?? `${method} ${path} answered ${response.status}`)
  }
  return data
}
