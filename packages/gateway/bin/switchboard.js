#!/usr/bin/env node
// Runs the compiled bundle (bin/compiled.mjs), built on the first start after a source changed;
// the TypeScript sources through tsx when it cannot be built or SWITCHBOARD_FROM_SOURCE=1.
import { ensureBundle, loadBundle } from './compiled.mjs'

async function load() {
  if (process.env.SWITCHBOARD_FROM_SOURCE !== '1') {
    try {
      const bundle = loadBundle(await ensureBundle())
      // The first start of a build leaves V8's code cache for the next ones.
      return { cli: bundle.exports, started: () => bundle.saveCodeCache('started') }
    } catch (error) {
      process.stderr.write(`switchboard: running from source, the compiled bundle failed: ${error instanceof Error ? error.message : String(error)}\n`)
    }
  }
  const { register } = await import('tsx/esm/api')
  register()
  return { cli: await import('../src/cli.ts'), started: () => {} }
}

const { cli, started } = await load()
const code = await cli.main(process.argv.slice(2))
// A node that could not start may have opened sockets (Postgres, p2p): exit rather than linger.
if (code !== 0) process.exit(code)
// Once a node listens, not after `--help` (a cache of the few functions it ran would stand for the build).
if (process.getActiveResourcesInfo().includes('TCPServerWrap')) started()
