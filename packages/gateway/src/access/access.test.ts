/**
 * Admin API access on the node's real Hono app (createApp): cross-site requests, rebinding
 * Hosts, proxy headers, the 415, and View vs Update on every admin route from the route table.
 */
import { describe, expect, it } from 'vitest'
import type { HttpBindings } from '@hono/node-server'
import { createApp, type AppComponents } from '../http/app.ts'
import { AREAS, ROUTE_ROLES, requiredRole, type Permission } from './roles.ts'
import { parseAdminTokens, TokenMatcher, type AdminToken } from './tokens.ts'
import { checkOrigin, isLoopback, isLoopbackHost } from './network.ts'

const PORT = 18_301

/** Components whose every use throws: these tests stop at (or pass) the access checks, never need a handler's data. */
const unusable = new Proxy({}, { get: () => { throw new Error('not available in this test') } })
const components = new Proxy({ logger: { error() {}, warn() {}, info() {}, debug() {} } } as Record<string, unknown>, {
  get: (target, name) => (name in target ? target[name as string] : unusable),
}) as unknown as AppComponents

interface Call {
  method?: string
  path?: string
  headers?: Record<string, string>
  body?: string
  remoteAddress?: string
  localPort?: number
}

function node(tokens: readonly AdminToken[], allowedOrigins: string[] = []) {
  const app = createApp(components, { maxRequestBodyBytes: 1024, allowDirectKeys: false, adminTokens: tokens, allowedOrigins, env: {} })
  const call = async ({ method = 'GET', path = '/api/providers', headers = {}, body, remoteAddress = '127.0.0.1', localPort = PORT }: Call) => {
    const all: Record<string, string> = { host: `127.0.0.1:${PORT}`, ...headers }
    if (body !== undefined) all['content-length'] = String(Buffer.byteLength(body))
    const lower = Object.fromEntries(Object.entries(all).map(([name, value]) => [name.toLowerCase(), value]))
    const response = await app.request(path, { method, headers: all, body }, { incoming: { headers: lower, socket: { remoteAddress, localPort } } } as unknown as HttpBindings)
    const text = await response.text()
    return { status: response.status, code: text.startsWith('{') ? ((JSON.parse(text) as { error?: { code?: string; message?: string } }).error?.code ?? null) : null, text, headers: response.headers }
  }
  return { app, call }
}

const UPDATE = 'update-token-0123456789'
const VIEW = 'view-token-0123456789ab'

describe('no admin tokens: loopback callers only', () => {
  const { call } = node([])

  it('serves a loopback caller sent to a loopback Host', async () => {
    for (const host of [`127.0.0.1:${PORT}`, `localhost:${PORT}`, `[::1]:${PORT}`]) {
      // The stub components make the handler fail (500): what matters is that access let it through.
      expect((await call({ headers: { host }, path: '/api/no-such-route' })).status).toBe(404)
    }
  })

  it('refuses a remote caller, and says how to configure tokens', async () => {
    const answer = await call({ remoteAddress: '10.1.2.3' })
    expect(answer.status).toBe(403)
    expect(answer.code).toBe('admin_forbidden')
    expect(answer.text).toContain('SWITCHBOARD_ADMIN_TOKENS')
  })

  it('refuses a rebinding Host (a page on evil.example resolving to 127.0.0.1)', async () => {
    for (const host of [`evil.example:${PORT}`, 'evil.example', `127.0.0.1:${PORT + 1}`, `localhost.evil.example:${PORT}`]) {
      const answer = await call({ headers: { host } })
      expect(answer.status, host).toBe(403)
      expect(answer.text).toContain('Host')
    }
  })

  it('refuses requests that came through a proxy', async () => {
    for (const header of ['x-forwarded-for', 'forwarded', 'x-forwarded-host', 'x-real-ip', 'x-forwarded-proto']) {
      const answer = await call({ headers: { [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9' } })
      expect(answer.status, header).toBe(403)
      expect(answer.text).toContain('proxy')
    }
  })

  it('refuses a cross-site simple POST before it can change anything', async () => {
    const answer = await call({ method: 'POST', path: '/api/providers', headers: { origin: 'http://evil.example', 'content-type': 'text/plain' }, body: '{"name":"evil","keys":[]}' })
    expect(answer.status).toBe(403)
    expect(answer.code).toBe('origin_forbidden')
    expect(answer.text).toContain('server.allowed_origins')
    const clear = await call({ method: 'POST', path: '/api/adaptive-routing/conditions/clear', headers: { origin: 'null', 'content-type': 'text/plain' }, body: '{}' })
    expect(clear.status).toBe(403)
  })

  it('takes JSON bodies only (415), same-origin or not', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', undefined]) {
      const answer = await call({ method: 'POST', path: '/api/providers', headers: { origin: `http://127.0.0.1:${PORT}`, ...(contentType ? { 'content-type': contentType } : {}) }, body: '{"name":"x","keys":[]}' })
      expect(answer.status, String(contentType)).toBe(415)
      expect(answer.code).toBe('unsupported_media_type')
    }
  })

  it('answers a preflight: CORS headers only for allowed origins, 403 for others', async () => {
    expect((await call({ method: 'OPTIONS', headers: { origin: 'http://evil.example' } })).status).toBe(403)
    const { call: allowedCall } = node([], ['https://dash.example.com'])
    const preflight = await allowedCall({ method: 'OPTIONS', headers: { origin: 'https://dash.example.com' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://dash.example.com')
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization')
  })

  it('lets the node\'s own origin and listed origins through', async () => {
    expect((await call({ path: '/api/none', headers: { origin: `http://127.0.0.1:${PORT}` } })).status).toBe(404)
    const { call: allowedCall } = node([], ['https://dash.example.com'])
    const answer = await allowedCall({ path: '/api/none', headers: { origin: 'https://dash.example.com' } })
    expect(answer.status).toBe(404)
  })

  it('guards pages outside /api (the dashboard) by Origin too, and leaves /health open', async () => {
    expect((await call({ path: '/', headers: { origin: 'http://evil.example' } })).status).toBe(403)
    expect((await call({ path: '/', headers: { origin: `http://127.0.0.1:${PORT}` } })).status).toBe(200)
    expect((await call({ path: '/' })).status).toBe(200)
  })
})

describe('with admin tokens', () => {
  const tokens = parseAdminTokens(`${UPDATE}:update,${VIEW}:view`)
  const { call } = node(tokens)
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

  it('needs a known bearer token from anywhere, loopback included', async () => {
    expect((await call({})).status).toBe(401)
    expect((await call({ remoteAddress: '10.1.2.3', headers: bearer('x'.repeat(20)) })).status).toBe(401)
    const fromProxy = await call({ remoteAddress: '10.1.2.3', headers: { ...bearer(VIEW), host: 'gateway.example.com', 'x-forwarded-for': '203.0.113.9' } })
    expect(fromProxy.status).not.toBe(401)
    expect(fromProxy.status).not.toBe(403)
  })

  it('still refuses a cross-site page even with a valid token', async () => {
    expect((await call({ method: 'DELETE', path: '/api/providers/openai', headers: { ...bearer(UPDATE), origin: 'http://evil.example' } })).status).toBe(403)
  })

  it('gives every admin route a role (a route added without one fails here)', () => {
    const { app } = node(tokens)
    const served = app.routes.filter((route) => route.path.startsWith('/api/') && route.method !== 'ALL')
    expect(served.length).toBeGreaterThan(5)
    for (const route of served) {
      const concrete = route.path.replace(/:[^/]+/g, 'x').replace(/\*$/, 'x/y')
      expect(requiredRole(route.method, concrete), `${route.method} ${route.path} has no entry in ROUTE_ROLES (access/roles.ts)`).not.toBeNull()
    }
  })

  it.each(ROUTE_ROLES.map((entry) => [`${entry.method} ${entry.path}`, entry] as const))('%s: the right role passes, every other is refused', async (_name, entry) => {
    const path = entry.path.replace(/:[^/]+/g, 'x').replace(/\*$/, 'x')
    const perArea = AREAS.flatMap((area) => (['view', 'update'] as const).map((level) => `${area}.${level}` as Permission))
    const roleTokens = perArea.map((permission, index) => ({ token: `role-token-${String(index).padStart(8, '0')}`, permissions: [permission] }))
    const { call: roleCall } = node([...tokens, ...roleTokens])
    const body = entry.method === 'GET' || entry.method === 'DELETE' ? undefined : '{}'
    const headers = (token: string) => ({ ...bearer(token), ...(body ? { 'content-type': 'application/json' } : {}) })
    for (const { token, permissions } of roleTokens) {
      const permission = permissions[0]!
      const allowed = entry.area === 'any' || permission === `${entry.area}.update` || (entry.level === 'view' && permission === `${entry.area}.view`)
      const answer = await roleCall({ method: entry.method, path, headers: headers(token), body })
      if (allowed) expect([401, 403], `${permission} on ${entry.method} ${path}`).not.toContain(answer.status)
      else expect({ permission, status: answer.status, code: answer.code }).toEqual({ permission, status: 403, code: 'admin_forbidden' })
    }
    const asView = await roleCall({ method: entry.method, path, headers: headers(VIEW), body })
    if (entry.level === 'update') expect(asView.status).toBe(403)
    else expect([401, 403]).not.toContain(asView.status)
    expect([401, 403]).not.toContain((await roleCall({ method: entry.method, path, headers: headers(UPDATE), body })).status)
  })

  it('keeps a route missing from the table for tokens with Update on every area', async () => {
    const { call: roleCall } = node([...tokens, { token: 'providers-only-token-1', permissions: ['providers.update'] }])
    expect((await roleCall({ path: '/api/unlisted', headers: bearer('providers-only-token-1') })).status).toBe(403)
    expect((await roleCall({ path: '/api/unlisted', headers: bearer(UPDATE) })).status).toBe(404)
  })
})

describe('tokens', () => {
  it('parses SWITCHBOARD_ADMIN_TOKENS with area roles, and rejects bad entries without echoing them', () => {
    const [update, view, mixed] = parseAdminTokens(`${'a'.repeat(16)}:update, ${'b'.repeat(16)}:view,${'c'.repeat(16)}:providers.update+logs.view`)
    expect(update!.permissions).toContain('settings.update')
    expect(view!.permissions).toEqual(AREAS.map((area) => `${area}.view`))
    expect(mixed).toEqual({ token: 'c'.repeat(16), permissions: ['providers.update', 'logs.view'] })
    expect(parseAdminTokens(undefined)).toEqual([])
    expect(() => parseAdminTokens('secret-secret-secret:admin')).toThrow(/entry 1 must look like/)
    expect(() => parseAdminTokens('secret-secret-secret:routing.view')).toThrow(/entry 1 must look like/)
    expect(() => parseAdminTokens('short:view')).toThrow(/at least 16/)
    expect(() => parseAdminTokens('secret-secret-secret:admin')).not.toThrow(/secret/)
  })

  it('matches tokens by digest', () => {
    const matcher = new TokenMatcher(parseAdminTokens(`${UPDATE}:update,${VIEW}:providers.view`))
    expect(matcher.match(VIEW)).toEqual(new Set(['providers.view']))
    expect(matcher.match(`${VIEW}x`)).toBeNull()
    expect(matcher.match('')).toBeNull()
  })

  it('knows loopback addresses, Hosts and origins', () => {
    expect([isLoopback('127.0.0.1'), isLoopback('127.9.9.9'), isLoopback('::1'), isLoopback('::ffff:127.0.0.1'), isLoopback('10.0.0.1'), isLoopback(undefined)]).toEqual([true, true, true, true, false, false])
    expect([isLoopbackHost('127.0.0.1:80', 80), isLoopbackHost('localhost', 80), isLoopbackHost('LOCALHOST:81', 81), isLoopbackHost('[::1]:81', 81), isLoopbackHost('[::1]', 81), isLoopbackHost('127.0.0.1.nip.io:81', 81)]).toEqual([true, true, true, true, false, false])
    const allowed = new Set(['https://dash.example.com'])
    expect([checkOrigin(undefined, 'a:1', allowed), checkOrigin('http://a:1', 'a:1', allowed), checkOrigin('https://dash.example.com', 'a:1', allowed), checkOrigin('http://a:2', 'a:1', allowed), checkOrigin('null', 'a:1', allowed)]).toEqual(['none', 'same', 'allowed', 'refused', 'refused'])
  })
})
