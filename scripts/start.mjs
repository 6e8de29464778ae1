#!/usr/bin/env node
// `npm start`: one Switchboard node in front of the provider simulator, with a demo config
// (an OpenAI provider with a healthy and a revoked key, Anthropic, and Azure), then prints
// how to send a request. Ctrl-C stops everything it started.
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { register } from 'tsx/esm/api'

register()
// The store is TypeScript, run directly like the rest of the tree.
const { ensureDatabase } = await import('@switchboard/store')

const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const { values } = parseArgs({ options: { port: { type: 'string', default: process.env.PORT ?? '8080' }, 'simulator-port': { type: 'string', default: '0' } } })
const children = []

function start(name, args, ready) {
  return new Promise((resolveReady, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' } })
    children.push(child)
    let output = ''
    const onData = (data) => {
      output += data.toString()
      const match = output.match(ready)
      if (match) resolveReady(match[1])
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', (data) => {
      onData(data)
      process.stderr.write(`[${name}] ${data}`)
    })
    child.once('exit', (code) => {
      if (!output.match(ready)) reject(new Error(`${name} exited with ${code}:\n${output}`))
      else if (!stopping) {
        console.error(`${name} exited with ${code}; stopping.`)
        stop(1)
      }
    })
  })
}

let stopping = false
let database
function stop(code = 0) {
  if (stopping) return
  stopping = true
  for (const child of children) child.kill('SIGTERM')
  // Nodes first, then the embedded Postgres this launcher started (release() leaves one it joined).
  setTimeout(() => {
    Promise.resolve(database?.release())
      .catch((error) => console.error(`could not stop the embedded Postgres: ${error.message}`))
      .finally(() => process.exit(code))
  }, 1000)
}
process.once('SIGINT', () => stop(0))
process.once('SIGTERM', () => stop(0))

try {
  // One Postgres for the local nodes: DATABASE_URL when set, else the embedded server under .switchboard/.
  const databaseUrl = process.env.SWITCHBOARD_DATABASE_URL ?? process.env.DATABASE_URL
  database = await ensureDatabase({ databaseUrl, dataDir: join(root, '.switchboard', 'postgres') })
  const simulatorUrl = await start('simulator', ['packages/simulator/bin/simulator.js', '--port', values['simulator-port']], /simulator listening on (http:\/\/\S+)/)
  // A rough day, in small: one revoked OpenAI key, and a slowish Anthropic.
  await fetch(`${simulatorUrl}/_sim/rules`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { key: 'sk-demo-revoked-0000', fault: 'invalid_api_key' },
      { provider: 'anthropic', latency_ms: { mean: 120, jitter: 40 } },
    ]),
  })
  const config = {
    providers: {
      openai: {
        keys: [
          { name: 'demo-healthy', value: 'sk-demo-healthy-1111', models: ['*'], weight: 1 },
          { name: 'demo-revoked', value: 'sk-demo-revoked-0000', models: ['*'], weight: 1 },
        ],
        network_config: { base_url: simulatorUrl },
      },
      anthropic: {
        keys: [{ name: 'demo-claude', value: 'sk-ant-demo-2222', models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5'], weight: 1 }],
        network_config: { base_url: simulatorUrl },
      },
      azure: {
        keys: [{ name: 'demo-azure', value: 'azure-demo-3333', models: ['gpt-4o'], weight: 1, azure_key_config: { deployments: { 'gpt-4o': 'gpt-4o-prod' } } }],
        network_config: { base_url: simulatorUrl },
      },
    },
  }
  mkdirSync(join(root, '.switchboard'), { recursive: true })
  const configFile = join(root, '.switchboard', 'demo-config.json')
  writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`)
  const gatewayUrl = await start('switchboard', ['packages/gateway/bin/switchboard.js', 'serve', '--config', configFile, '--port', values.port, '--database-url', database.url], /switchboard listening on (http:\/\/[\d.:]+)/)
  console.log(`
Switchboard is running.
  gateway:    ${gatewayUrl}   (config: .switchboard/demo-config.json)
  postgres:   ${database.embedded ? 'embedded, under .switchboard/postgres' : 'from DATABASE_URL'}
  simulator:  ${simulatorUrl}   (fake OpenAI, Azure and Anthropic; rules at ${simulatorUrl}/_sim/rules)

Send a request (any OpenAI SDK works with base URL ${gatewayUrl}/v1):

  curl -s ${gatewayUrl}/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Hello"}]}'

  One OpenAI key is revoked in the simulator: look at "extra_fields.attempts" to see the
  gateway rotate off it. Try "anthropic/claude-3-5-haiku-latest", "azure/gpt-4o", "stream": true,
  or "fallbacks": ["anthropic/claude-3-5-haiku-latest"].

Ctrl-C stops it.`)
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  stop(1)
}
