#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so `npx switchboard` works right after `npm install`.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../src/cli.ts')
const code = await main(process.argv.slice(2))
// A node that could not start may have opened sockets (Postgres, p2p): exit rather than linger.
if (code !== 0) process.exit(code)
