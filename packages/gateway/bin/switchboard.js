#!/usr/bin/env node
// Runs the compiled bundle (bin/compiled.mjs), built on the first start after a source changed;
// the TypeScript sources through tsx when it cannot be built or SWITCHBOARD_FROM_SOURCE=1.
// The Docker image ships the bundle alone (no sources, no tsx, no esbuild): there a bundle that
// fails is the error, not a fall back to sources it does not have.
import { ensureBundle } from './compiled.mjs'

const describe = (error) => (error instanceof Error ? error.message : String(error))

async function load() {
  let bundleFailure
  if (process.env.SWITCHBOARD_FROM_SOURCE !== '1') {
    try {
      return await import(await ensureBundle())
    } catch (error) {
      bundleFailure = error
    }
  }
  let register
  try {
    ;({ register } = await import('tsx/esm/api'))
  } catch (error) {
    if (bundleFailure === undefined) throw error
    throw new Error(`the compiled bundle failed, and tsx is not installed to run the sources instead: ${describe(bundleFailure)}`, { cause: bundleFailure })
  }
  if (bundleFailure !== undefined) process.stderr.write(`switchboard: running from source, the compiled bundle failed: ${describe(bundleFailure)}\n`)
  register()
  return import('../src/cli.ts')
}

let loaded
try {
  loaded = await load()
} catch (error) {
  process.stderr.write(`switchboard: ${describe(error)}\n`)
  process.exit(1)
}
const code = await loaded.main(process.argv.slice(2))
// A node that could not start may have opened sockets (Postgres, p2p): exit rather than linger.
if (code !== 0) process.exit(code)
