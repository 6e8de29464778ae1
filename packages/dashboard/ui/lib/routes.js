// The routes card's rows (GET /api/adaptive-routing/routes), grouped the way the card shows them.

/** @typedef {import('./answers').RouteEntry} RouteEntry */

/** Routes grouped by "provider/model", in the order each group first appears. */
export function groupRoutes(/** @type {RouteEntry[] | undefined} */ routes) {
  /** @type {Map<string, RouteEntry[]>} */
  const groups = new Map()
  for (const route of routes ?? []) {
    const name = `${route.provider}/${route.model}`
    const members = groups.get(name)
    if (members) members.push(route)
    else groups.set(name, [route])
  }
  return groups
}

/** What a state badge shows: a held route reads Failed, hatched. */
export const shownState = (/** @type {string} */ state, /** @type {boolean} */ held) => (held ? 'failed' : state)
