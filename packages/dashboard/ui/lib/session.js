// What this tab's token may do, as GET /api/session reports it. With per-area permissions
// (`providers.update`), those decide; otherwise the role does (Update implies View).

/** @typedef {{ role: 'view' | 'update' | null, permissions?: string[] | undefined }} SessionGrant */

/** True when the session may do `level` (view | update) on `area` (adaptive_routing, providers, logs, settings). */
export function can(/** @type {SessionGrant} */ session, /** @type {string} */ area, /** @type {'view' | 'update'} */ level = 'update') {
  if (Array.isArray(session.permissions)) return session.permissions.includes(`${area}.update`) || (level === 'view' && session.permissions.includes(`${area}.view`))
  return level === 'view' ? session.role !== null : session.role === 'update'
}
