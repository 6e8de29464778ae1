/**
 * Admin roles (issue 13): View and Update per area. Every admin route is in ROUTE_ROLES; one
 * missing needs Update on every area (fails closed), and access.test.ts fails for it.
 */

/** The areas of the admin API. */
export const AREAS = ['adaptive_routing', 'providers', 'logs', 'settings'] as const
export type Area = (typeof AREAS)[number]

/** View reads an area; Update also changes it. */
export type Level = 'view' | 'update'

/** One permission: an area and a level, written `providers.update`. */
export type Permission = `${Area}.${Level}`

/** What one admin route needs. `path` is Hono's pattern (`:name` for a segment, a final `*` for the rest). */
export interface RouteRole {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'
  path: string
  /** `any`: every valid token (the dashboard asking what its token may do). */
  area: Area | 'any'
  level: Level
}

const route = (method: RouteRole['method'], path: string, area: Area | 'any', level: Level): RouteRole => ({ method, path, area, level })

/** Every admin route and the role it needs (design.md, "Admin roles"). */
export const ROUTE_ROLES: readonly RouteRole[] = [
  route('GET', '/api/adaptive-routing/conditions', 'adaptive_routing', 'view'),
  route('POST', '/api/adaptive-routing/conditions/clear', 'adaptive_routing', 'update'),
  route('GET', '/api/adaptive-routing/config', 'adaptive_routing', 'view'),
  route('PUT', '/api/adaptive-routing/config', 'adaptive_routing', 'update'),
  route('GET', '/api/load-balancer-config', 'adaptive_routing', 'view'),
  route('PUT', '/api/load-balancer-config', 'adaptive_routing', 'update'),
  route('GET', '/api/adaptive-routing/routes', 'adaptive_routing', 'view'),
  route('GET', '/api/adaptive-routing/history/*', 'adaptive_routing', 'view'),
  route('GET', '/api/providers', 'providers', 'view'),
  route('POST', '/api/providers', 'providers', 'update'),
  route('GET', '/api/providers/:name', 'providers', 'view'),
  route('PUT', '/api/providers/:name', 'providers', 'update'),
  route('DELETE', '/api/providers/:name', 'providers', 'update'),
  route('GET', '/api/logs', 'logs', 'view'),
  route('GET', '/api/logs/*', 'logs', 'view'),
  route('GET', '/api/cluster', 'settings', 'view'),
  route('GET', '/api/session', 'any', 'view'),
  route('GET', '/api/gateway-keys', 'settings', 'view'),
  route('POST', '/api/gateway-keys', 'settings', 'update'),
  route('GET', '/api/gateway-keys/:id', 'settings', 'view'),
  route('DELETE', '/api/gateway-keys/:id', 'settings', 'update'),
]

const compiled = ROUTE_ROLES.map((entry) => {
  const rest = entry.path.endsWith('/*')
  const segments = (rest ? entry.path.slice(0, -2) : entry.path).split('/')
  return { entry, segments, rest }
})

/** The role a request needs; null when the route is not in the table (then: Update on every area). */
export function requiredRole(method: string, path: string): RouteRole | null {
  const asked = method === 'HEAD' ? 'GET' : method
  const parts = path.split('/')
  for (const candidate of compiled) {
    if (candidate.entry.method !== asked) continue
    if (candidate.rest ? parts.length <= candidate.segments.length : parts.length !== candidate.segments.length) continue
    // A `:name` segment takes any non-empty part.
    if (candidate.segments.every((segment, index) => (segment.startsWith(':') ? parts[index] !== '' : segment === parts[index]))) return candidate.entry
  }
  return null
}

/** True when `granted` allows `level` on `area` (Update implies View); any permission allows `any`. */
export function allows(granted: ReadonlySet<Permission>, area: Area | 'any', level: Level): boolean {
  if (area === 'any') return granted.size > 0
  return granted.has(`${area}.update`) || (level === 'view' && granted.has(`${area}.view`))
}

/** Every permission of one level on every area: what `view` and `update` alone mean. */
export function everyArea(level: Level): Permission[] {
  return AREAS.map((area) => `${area}.${level}` as Permission)
}

/** Reads `view`, `update`, or `area.level`; null when it is neither. */
export function parsePermission(text: string): Permission[] | null {
  if (text === 'view' || text === 'update') return everyArea(text)
  const dot = text.lastIndexOf('.')
  const area = text.slice(0, dot) as Area
  const level = text.slice(dot + 1)
  if (dot <= 0 || !AREAS.includes(area) || (level !== 'view' && level !== 'update')) return null
  return [`${area}.${level}`]
}
