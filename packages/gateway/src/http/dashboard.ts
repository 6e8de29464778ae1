/**
 * Serves the web UI (packages/dashboard) at `/` and its modules under `/ui/`, on the same
 * origin as the admin API, so the page calls the API with the same bearer tokens and
 * same-origin rules as any script. The page itself is public (it holds no data); every
 * number on it comes from the admin API, which checks the token.
 */
import type { Hono } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import { createHash, timingSafeEqual } from 'node:crypto'
import { createDashboard } from '@switchboard/dashboard'
import type { AdminRole, AdminToken } from '../admin/auth.ts'

export interface DashboardInit {
  adminTokens: readonly AdminToken[]
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Adds `GET /`, `GET /ui/*` and `GET /api/session` to the app. The session route sits behind
 * the admin API's guard like every /api route: it tells the page what the caller's token may
 * do, so the page can hide or disable what it cannot (the API refuses it anyway).
 */
export function serveDashboard(app: Hono<{ Bindings: HttpBindings }>, init: DashboardInit): void {
  const dashboard = createDashboard()
  const known = init.adminTokens.map((entry) => ({ digest: digest(entry.token), role: entry.role }))
  app.get('/api/session', (context) => {
    // The guard already let this caller in: with no tokens configured only loopback callers
    // get here, and they may do everything.
    let role: AdminRole = 'update'
    if (known.length > 0) {
      const offered = digest((/^Bearer\s+(.+)$/i.exec(context.req.header('authorization') ?? '')?.[1] ?? '').trim())
      role = known.find((entry) => timingSafeEqual(entry.digest, offered))?.role ?? 'view'
    }
    return context.json({ role, tokens_required: known.length > 0 })
  })
  const serve = (path: string, ifNoneMatch: string | undefined) => {
    const asset = dashboard.asset(path)
    if (!asset) return undefined
    const headers: Record<string, string> = {
      'content-type': asset.contentType,
      etag: asset.etag,
      // Revalidate every load (cheap on the same node): a new release is picked up at once.
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    }
    if (path === '/') {
      headers['content-security-policy'] = dashboard.contentSecurityPolicy
      headers['x-frame-options'] = 'DENY'
    }
    if (ifNoneMatch === asset.etag) return new Response(null, { status: 304, headers })
    return new Response(new Uint8Array(asset.body), { status: 200, headers })
  }
  app.get('/', (context) => serve('/', context.req.header('if-none-match')) ?? context.notFound())
  app.get('/ui/*', (context) => serve(context.req.path, context.req.header('if-none-match')) ?? context.notFound())
}
