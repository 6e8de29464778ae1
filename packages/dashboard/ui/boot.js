// Runs before the views load (its only imports are two small plain modules): asks for what the
// page will show first, so the answers travel while Preact, htm and the pages are still loading.
// The views pick the answers up by URL (lib/http.js); one nobody picks up within 10 s is dropped.
import { prefetch } from './lib/http.js'
import { dashboardPaths, parseRoute, windowOf } from './lib/query.js'

const now = Date.now()
const route = parseRoute()
const paths = ['/api/session']
if (route.page === 'dashboard') paths.push(...Object.values(dashboardPaths(route.params, windowOf(route.params, now))))
prefetch(paths, now)
