/**
 * Serves the web UI at `/` and `/ui/` on the admin API's origin, so the page calls the API with
 * the same tokens and rules as any script. The page itself holds no data.
 */
import type { Hono } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import { createDashboard } from '@switchboard/dashboard'
import { AREAS, allows, everyArea, type Permission } from '../access/roles.ts'
import { TokenMatcher, type AdminToken } from '../access/tokens.ts'

/** Adds `GET /`, `GET /ui/*` and `GET /api/session` (behind the admin guard: what the caller's token may do, for the page to show). */
export function serveDashboard(app: Hono<{ Bindings: HttpBindings }>, adminTokens: readonly AdminToken[]): void {
  const dashboard = createDashboard()
  const known = new TokenMatcher(adminTokens)
  app.get('/api/session', (context) => {
    // The guard let this caller in: with no tokens configured, a loopback caller, who may do everything.
    let permissions: ReadonlySet<Permission> = new Set(everyArea('update'))
    if (known.size > 0) permissions = known.match((/^Bearer\s+(.+)$/i.exec(context.req.header('authorization') ?? '')?.[1] ?? '').trim()) ?? new Set()
    const role = AREAS.every((area) => allows(permissions, area, 'update')) ? 'update' : 'view'
    return context.json({ role, permissions: [...permissions].sort(), tokens_required: known.size > 0 })
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
