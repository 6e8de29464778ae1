// The shell: navigation, the time window and Live mode shared by every page, the sign-in box
// (the admin token is kept for this tab only), and which page is showing.
import { render } from 'preact'
import { useEffect, useState, useCallback } from 'preact/hooks'
import { html, inputChecked, inputValue } from './lib/html.js'
import { api, setToken, token } from './lib/api.js'
import { bootTime } from './lib/http.js'
import { navigate, useRoute, windowOf, WINDOWS } from './lib/route.js'
import { customWindowParams, isLive, pageHref } from './lib/query.js'
import { DashboardPage } from './pages/dashboard.js'
import { IncidentsPage } from './pages/incidents.js'
import { LogsPage } from './pages/logs.js'
import { SettingsPage } from './pages/settings.js'
import { ProvidersPage } from './pages/providers.js'
import { ClusterPage } from './pages/cluster.js'

/** @typedef {import('./lib/page').Session} Session */
/** @typedef {import('./lib/page').PageContext} PageContext */
/** @typedef {import('./lib/query.js').Route} Route */
/** @typedef {import('./lib/query.js').TimeWindow} TimeWindow */
/** @typedef {import('./lib/answers').SessionAnswer} SessionAnswer */

/** @type {[string, string, (props: { context: PageContext }) => unknown][]} */
const NAV = [
  ['dashboard', 'Dashboard', DashboardPage],
  ['incidents', 'Incidents', IncidentsPage],
  ['logs', 'Request log', LogsPage],
  ['settings', 'Settings', SettingsPage],
  ['providers', 'Providers', ProvidersPage],
  ['cluster', 'Cluster', ClusterPage],
]
const LIVE_MS = 5000

/**
 * Who this tab is to the API: GET /api/session answers the role of the token (or of loopback).
 * Pages load their data at the same time (not after it): until the answer is in, nothing that
 * changes the fleet is enabled.
 */
function useSession() {
  const [session, setSession] = useState(/** @type {Session} */ ({ role: null, checked: false, needsToken: false }))
  const check = useCallback(() => {
    api('GET', '/api/session').then(
      (data) => {
        const answer = /** @type {SessionAnswer} */ (data)
        setSession({ role: answer.role, permissions: answer.permissions, checked: true, needsToken: false, tokensRequired: answer.tokens_required })
      },
      (/** @type {import('./lib/http.js').ApiError} */ error) => setSession({ role: null, checked: true, needsToken: error.status === 401, error }),
    )
  }, [])
  useEffect(() => {
    check()
    const onToken = () => check()
    const onUnauthorized = () => setSession((previous) => ({ ...previous, role: null, needsToken: true }))
    window.addEventListener('sb:token', onToken)
    window.addEventListener('sb:unauthorized', onUnauthorized)
    return () => {
      window.removeEventListener('sb:token', onToken)
      window.removeEventListener('sb:unauthorized', onUnauthorized)
    }
  }, [check])
  return session
}

/** @param {{ session: Session }} props */
function SignIn({ session }) {
  const [value, setValue] = useState('')
  const submit = (/** @type {Event} */ event) => {
    event.preventDefault()
    setToken(value.trim())
    setValue('')
  }
  return html`<div class="signin-backdrop">
    <form class="signin card" onSubmit=${submit} aria-label="Sign in">
      <h2>Sign in to this gateway</h2>
      <p>This node's admin API needs a token. A View token lets you look; an Update token also lets you release keys and change settings. The token stays in this tab only.</p>
      ${token() && session.needsToken ? html`<div class="notice error" role="alert">That token was not accepted.</div>` : null}
      <label>Admin token <input type="password" name="token" autocomplete="current-password" value=${value} required onInput=${(/** @type {InputEvent} */ event) => setValue(inputValue(event))} /></label>
      <button type="submit">Sign in</button>
    </form>
  </div>`
}

/** @param {{ route: Route, window: TimeWindow }} props */
function WindowPicker({ route, window }) {
  const set = (/** @type {string} */ name) => navigate(route.page, name === 'custom' ? customWindowParams(window) : { window: name, from: null, to: null })
  return html`<div class="window" role="group" aria-label="Time window">
    ${[...Object.keys(WINDOWS), 'custom'].map((name) => html`<button key=${name} class=${window.name === name ? 'chip on' : 'chip'} aria-pressed=${window.name === name} onClick=${() => set(name)}>${name === 'custom' ? 'Custom' : `Last ${name}`}</button>`)}
    ${window.name === 'custom'
      ? html`<input type="datetime-local" aria-label="From" value=${route.params.from} onChange=${(/** @type {Event} */ event) => navigate(route.page, { from: inputValue(event) })} />
          <input type="datetime-local" aria-label="To" value=${route.params.to} onChange=${(/** @type {Event} */ event) => navigate(route.page, { to: inputValue(event) })} />`
      : null}
  </div>`
}

function App() {
  const route = useRoute()
  const session = useSession()
  const live = isLive(route.params)
  const [tick, setTick] = useState(0)
  const [version, setVersion] = useState(0)
  // boot.js's clock: the first window is the one it already asked for.
  const [now, setNow] = useState(bootTime)
  useEffect(() => {
    if (!live) return undefined
    const timer = setInterval(() => {
      setNow(Date.now())
      setTick((value) => value + 1)
    }, LIVE_MS)
    return () => clearInterval(timer)
  }, [live])
  const reload = useCallback(() => {
    setNow(Date.now())
    setVersion((value) => value + 1)
  }, [])
  // The window moves only on a live tick or a reload, so pages fetch once per tick, not per render.
  const window = windowOf(route.params, now)
  /** @type {PageContext} */
  const context = { route, session, tick, version, now, window, live, reload }
  // parseRoute names only pages of NAV, so the find cannot miss; the dashboard if it ever does.
  const [, title, Page] = NAV.find(([page]) => page === route.page) ?? /** @type {NonNullable<(typeof NAV)[number]>} */ (NAV[0])
  return html`<div class="shell">
    <header class="top">
      <a class="brand" href="#/dashboard">Switchboard</a>
      <nav>${NAV.map(([page, label]) => html`<a key=${page} href=${pageHref(page, location.hash)} class=${route.page === page ? 'on' : ''} aria-current=${route.page === page ? 'page' : undefined}>${label}</a>`)}</nav>
      <span class="spacer"></span>
      <${WindowPicker} route=${route} window=${window} />
      <label class="live" title="Refresh every 5 seconds"><input type="checkbox" name="live" checked=${live} disabled=${window.name === 'custom'}
        onChange=${(/** @type {Event} */ event) => navigate(route.page, { live: inputChecked(event) ? null : '0' })} /> Live</label>
      <span class="who" data-testid="session">
        ${session.role ? html`<span class=${`tag role-${session.role}`} title=${session.tokensRequired ? 'Signed in with an admin token' : 'No admin tokens are configured: this loopback client may do everything'}>${session.role === 'update' ? 'Update' : 'View'}</span>` : null}
        ${token() ? html`<button class="link" onClick=${() => setToken(null)}>Sign out</button>` : null}
      </span>
    </header>
    <main>
      <h1>${title}</h1>
      ${session.needsToken || (session.checked && !session.role) ? null : html`<${Page} context=${context} key=${route.page} />`}
      ${session.checked && !session.role && !session.needsToken ? html`<div class="notice error" role="alert">${session.error?.message ?? 'This node did not answer.'}</div>` : null}
    </main>
    ${session.needsToken ? html`<${SignIn} session=${session} />` : null}
  </div>`
}

const root = document.getElementById('app')
if (!root) throw new Error('index.html has no #app')
root.textContent = ''
render(/** @type {import('preact').VNode} */ (html`<${App} />`), root)
