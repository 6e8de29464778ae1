/**
 * @switchboard/dashboard — the web UI every node serves at `/`.
 *
 * No build step: the pages under `ui/` are ES modules served as they are, with Preact +
 * htm for views and uPlot for time series. The page's import map points the bare imports
 * (`preact`, `preact/hooks`, `htm`, `uplot`) at files served from those packages, so every
 * asset comes from the node itself (no CDN). Assets are read once, at startup.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { dirname, extname, join, sep } from 'node:path'

/** One file the dashboard serves. */
export interface DashboardAsset {
  body: Buffer
  contentType: string
  /** A strong validator of the body, for `If-None-Match`. */
  etag: string
}

/** The dashboard's files, by URL path. */
export interface Dashboard {
  /** The asset at a URL path (`/` is the page), or undefined. */
  asset(path: string): DashboardAsset | undefined
  /** Every URL path served (for tests and logs). */
  paths(): string[]
  /** The Content-Security-Policy of the page: own origin only, the inline import map by its hash. */
  contentSecurityPolicy: string
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

/** Where the third-party modules come from: URL path -> file inside the package. */
const VENDOR: { path: string; from: string; file: string }[] = [
  { path: '/ui/vendor/preact.js', from: 'preact', file: 'preact.module.js' },
  { path: '/ui/vendor/preact-hooks.js', from: 'preact/hooks', file: 'hooks.module.js' },
  { path: '/ui/vendor/htm.js', from: 'htm', file: 'htm.module.js' },
  { path: '/ui/vendor/uplot.js', from: 'uplot', file: 'uPlot.esm.js' },
  { path: '/ui/vendor/uplot.css', from: 'uplot', file: 'uPlot.min.css' },
]

/** Reads the UI and the vendor modules into memory. */
export function createDashboard(): Dashboard {
  const require = createRequire(import.meta.url)
  // Through the package, not this module's URL: in the gateway's compiled bundle that URL is the bundle's.
  const uiDir = join(dirname(dirname(require.resolve('@switchboard/dashboard'))), 'ui')
  const assets = new Map<string, DashboardAsset>()
  const add = (path: string, file: string) => {
    const body = readFileSync(file)
    assets.set(path, { body, contentType: TYPES[extname(file)] ?? 'application/octet-stream', etag: `"${createHash('sha1').update(body).digest('base64url')}"` })
  }
  // The browser runs the .js files as they are; the .ts beside them (tests, types for the type
  // check) are for the repository only, and not served.
  for (const name of readdirSync(uiDir, { recursive: true, encoding: 'utf8' })) {
    const file = join(uiDir, name)
    if (!file.endsWith('.ts') && statSync(file).isFile()) add(`/ui/${name.split(sep).join('/')}`, file)
  }
  for (const vendor of VENDOR) add(vendor.path, join(dirname(require.resolve(vendor.from)), vendor.file))
  const page = assets.get('/ui/index.html')
  if (!page) throw new Error(`the dashboard has no ui/index.html under ${uiDir}`)
  assets.set('/', page)
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(page.body.toString('utf8'))?.[1] ?? ''
  const mapHash = createHash('sha256').update(importMap).digest('base64')
  return {
    asset: (path) => assets.get(path),
    paths: () => [...assets.keys()],
    contentSecurityPolicy: `default-src 'self'; script-src 'self' 'sha256-${mapHash}'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`,
  }
}
