#!/usr/bin/env node
// Runs the compiled bundle (bin/compiled.mjs), built on the first start after a source changed;
// the TypeScript sources through tsx when it cannot be built or SWITCHBOARD_FROM_SOURCE=1.
import { ensureBundle } from './compiled.mjs'

async function load() {
  if (process.env.SWITCHBOARD_FROM_SOURCE !== '1') {
    try {
      return await import(await ensureBundle())
    } catch (error) {
      process.stderr.write(`switchboard: running from source, the compiled bundle failed: ${error instanceof Error ? error.message : String(error)}\n`)
    }
  }
  const { register } = await import('tsx/esm/api')
  register()
  return import('../src/cli.ts')
}

const { main } = await load()
const code = await main(process.argv.slice(2))
// A node that could not start may have opened sockets (Postgres, p2p): exit rather than linger.
if (code !== 0) process.exit(code)
