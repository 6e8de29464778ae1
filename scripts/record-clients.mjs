#!/usr/bin/env node
/**
 * Records the first requests of the real agent CLIs (issue 37) as test fixtures:
 * packages/gateway/test/fixtures/clients/*.json. Each CLI is pointed at a small recording
 * server on 127.0.0.1 that answers like the provider would (a one-word answer), in a temp
 * HOME and work dir; what it sent is scrubbed (keys, ids, paths, kernel version) and long
 * texts (the vendors' system prompts and tool descriptions) are shortened: the shape stays.
 *
 *   npm i --prefix /tmp/clis @anthropic-ai/claude-code @openai/codex opencode-ai
 *   CLIS=/tmp/clis node scripts/record-clients.mjs
 */
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(fileURLToPath(new URL('..', import.meta.url)))
const out = join(root, 'packages/gateway/test/fixtures/clients')
const clis = process.env.CLIS ?? '/tmp/clis'
const bin = (name) => join(clis, 'node_modules/.bin', name)
const version = (name) => JSON.parse(readFileSync(join(clis, 'node_modules', name, 'package.json'), 'utf8')).version

/**
 * A server that keeps every request and answers each surface with "hello"; with `call`, a
 * Responses request offering that namespaced tool (and no tool output yet) is answered with a
 * call of it, so the CLI's next request carries the call and its output.
 */
function recorder(call) {
  const requests = []
  const server = createServer((request, response) => {
    const chunks = []
    request.on('data', (chunk) => chunks.push(chunk))
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      let body = text
      try { body = JSON.parse(text) } catch { /* kept as text */ }
      requests.push({ method: request.method, path: request.url, headers: request.headers, body })
      answer(request.url ?? '', body, response, call)
    })
  })
  return new Promise((resolveServer) => server.listen(0, '127.0.0.1', () => resolveServer({ server, requests, url: `http://127.0.0.1:${server.address().port}` })))
}

function answer(path, body, response, call) {
  const stream = body?.stream === true
  const sse = () => response.writeHead(200, { 'content-type': 'text/event-stream' })
  const json = (value) => { response.writeHead(200, { 'content-type': 'application/json' }); response.end(JSON.stringify(value)) }
  if (path.startsWith('/v1/messages')) {
    const message = { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } }
    if (path.includes('count_tokens')) return json({ input_tokens: 5 })
    if (!stream) return json(message)
    sse()
    const event = (data) => response.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`)
    event({ type: 'message_start', message: { ...message, content: [], stop_reason: null } })
    event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
    event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } })
    event({ type: 'content_block_stop', index: 0 })
    event({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } })
    event({ type: 'message_stop' })
    return response.end()
  }
  if (path.startsWith('/v1/responses')) {
    const answered = Array.isArray(body.input) && body.input.some((entry) => entry.type === 'function_call_output')
    const offered = call !== undefined && !answered && (body.tools ?? []).some((tool) => tool.type === 'namespace' && tool.name === call.namespace)
    const item = offered
      ? { id: 'fc_1', type: 'function_call', status: 'completed', call_id: 'call_1', ...call }
      : { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'hello', annotations: [] }] }
    const done = { id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: body.model, output: [item], usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 } }
    if (!stream) return json(done)
    sse()
    const event = (data) => response.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`)
    event({ type: 'response.created', response: { ...done, status: 'in_progress', output: [] } })
    event({ type: 'response.output_item.added', output_index: 0, item: offered ? { ...item, status: 'in_progress' } : { ...item, status: 'in_progress', content: [] } })
    if (!offered) event({ type: 'response.output_text.delta', output_index: 0, content_index: 0, item_id: 'msg_1', delta: 'hello' })
    event({ type: 'response.output_item.done', output_index: 0, item })
    event({ type: 'response.completed', response: done })
    return response.end()
  }
  if (path.startsWith('/v1/chat/completions')) {
    const base = { id: 'chatcmpl-1', created: 1, model: body.model }
    if (!stream) return json({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } })
    sse()
    const chunk = (fields) => response.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', ...fields })}\n\n`)
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hello' }, finish_reason: null }] })
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })
    chunk({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } })
    response.write('data: [DONE]\n\n')
    return response.end()
  }
  response.writeHead(404, { 'content-type': 'application/json' })
  response.end('{}')
}

function run(command, args, env, cwd) {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (data) => (output += data))
    child.stderr.on('data', (data) => (output += data))
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000)
    child.once('exit', (code) => { clearTimeout(timer); resolveRun({ code, output }) })
  })
}

const SECRET_HEADERS = new Set(['authorization', 'x-api-key'])
const DROPPED_HEADERS = new Set(['host', 'content-length', 'connection', 'accept-encoding'])
const LONG = 400

/** The request without secrets, machine-specific values and most of its long texts. */
function scrub(request, dirs) {
  const ids = new Map()
  const placeholder = (value, kind) => {
    if (!ids.has(value)) ids.set(value, kind === 'uuid' ? `00000000-0000-4000-8000-${String(ids.size + 1).padStart(12, '0')}` : `ses_fixture${String(ids.size + 1).padStart(15, '0')}`)
    return ids.get(value)
  }
  const text = (value) => {
    let result = value
    for (const [dir, name] of dirs) result = result.split(dir).join(name)
    result = result.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (id) => placeholder(id, 'uuid'))
    result = result.replace(/ses_[A-Za-z0-9]{20,}/g, (id) => placeholder(id, 'session'))
    result = result.replace(/"device_id":"[0-9a-f]{64}"/g, `"device_id":"${'0'.repeat(64)}"`).replace(/\\"device_id\\":\\"[0-9a-f]{64}\\"/g, `\\"device_id\\":\\"${'0'.repeat(64)}\\"`)
    result = result.replace(/(linux) \d+\.\d+\.\d+[^\s";)\\]*/gi, '$1 6.x').replace(/"turn_started_at_unix_ms\\?":\d+/g, (match) => match.replace(/\d+$/, '0'))
    return result
  }
  const walk = (value, shorten) => {
    if (typeof value === 'string') {
      const clean = text(value)
      return shorten && clean.length > LONG ? `${clean.slice(0, 200)}…[${clean.length} characters recorded; shortened for the fixture]` : clean
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, shorten))
    if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item, shorten && key !== 'x-codex-turn-metadata')]))
    return value
  }
  const headers = {}
  for (const [name, value] of Object.entries(request.headers)) {
    if (DROPPED_HEADERS.has(name)) continue
    headers[name] = SECRET_HEADERS.has(name) ? (name === 'authorization' ? 'Bearer <caller-key>' : '<caller-key>') : walk(value, false)
  }
  return { method: request.method, path: request.path, headers, body: walk(request.body, true) }
}

const today = new Date().toISOString().slice(0, 10)

async function record(name, client, cli, surface, setup, call) {
  const { server, requests, url } = await recorder(call)
  const home = mkdtempSync(join(tmpdir(), `record-${name}-home-`))
  const work = mkdtempSync(join(tmpdir(), `record-${name}-work-`))
  const { command, args, env } = setup(url, home, work)
  const result = await run(command, args, { HOME: home, ...env }, work)
  server.close()
  const inference = requests.filter((request) => request.method === 'POST')
  if (inference.length === 0) throw new Error(`${name}: no request recorded (exit ${result.code})\n${result.output}`)
  const first = inference.at(-1)
  const fixture = {
    client, version: version(cli), recorded_at: today, command: [command.split('/').at(-1), ...args].join(' '), surface,
    note: 'The CLI\'s main request (the last POST of the run), as it reached a recording server: keys replaced by <caller-key>, ids by placeholders, paths by /home/user and /workspace; texts over 400 characters shortened (the vendors\' prompts), every field and block kept.',
    ...scrub(first, [[work, '/workspace'], [home, '/home/user']]),
  }
  writeFileSync(join(out, `${name}.json`), `${JSON.stringify(fixture, null, 2)}\n`)
  console.log(`${name}: ${fixture.method} ${fixture.path} (${client} ${fixture.version}), exit ${result.code}`)
}

mkdirSync(out, { recursive: true })
await record('claude-code', 'Claude Code', '@anthropic-ai/claude-code', 'messages', (url) => ({
  command: bin('claude'), args: ['-p', 'hi'],
  env: { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: 'sk-ant-recording', DISABLE_TELEMETRY: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
}))
await record('codex', 'Codex CLI', '@openai/codex', 'responses', (url, home) => {
  mkdirSync(join(home, '.codex'), { recursive: true })
  writeFileSync(join(home, '.codex/config.toml'), `model = "claude-sonnet-4-5"\nmodel_provider = "switchboard"\n\n[model_providers.switchboard]\nname = "Switchboard"\nbase_url = "${url}/v1"\nenv_key = "SWITCHBOARD_API_KEY"\nwire_api = "responses"\n`)
  return { command: bin('codex'), args: ['exec', '--skip-git-repo-check', 'hi'], env: { CODEX_HOME: join(home, '.codex'), SWITCHBOARD_API_KEY: 'sk-recording' } }
})
// Codex's next turn after the model called a tool of a namespace: the call (with `namespace`) and its output in the history.
await record('codex-namespace-call', 'Codex CLI', '@openai/codex', 'responses', (url, home) => {
  mkdirSync(join(home, '.codex'), { recursive: true })
  writeFileSync(join(home, '.codex/config.toml'), `model = "claude-sonnet-4-5"\nmodel_provider = "switchboard"\n\n[model_providers.switchboard]\nname = "Switchboard"\nbase_url = "${url}/v1"\nenv_key = "SWITCHBOARD_API_KEY"\nwire_api = "responses"\n`)
  return { command: bin('codex'), args: ['exec', '--skip-git-repo-check', 'close the agent'], env: { CODEX_HOME: join(home, '.codex'), SWITCHBOARD_API_KEY: 'sk-recording' } }
}, { namespace: 'multi_agent_v1', name: 'close_agent', arguments: '{"target":"no-such-agent"}' })
await record('opencode-chat', 'OpenCode', 'opencode-ai', 'chat', (url, _home, work) => {
  writeFileSync(join(work, 'opencode.json'), JSON.stringify({ provider: { switchboard: { npm: '@ai-sdk/openai-compatible', name: 'Switchboard', options: { baseURL: `${url}/v1`, apiKey: 'sk-recording' }, models: { 'claude-sonnet-4-5': {} } } }, model: 'switchboard/claude-sonnet-4-5' }))
  return { command: bin('opencode'), args: ['run', 'hi'], env: { OPENCODE_DISABLE_AUTOUPDATE: '1' } }
})
await record('opencode-responses', 'OpenCode', 'opencode-ai', 'responses', (url, _home, work) => {
  writeFileSync(join(work, 'opencode.json'), JSON.stringify({ provider: { openai: { options: { baseURL: `${url}/v1`, apiKey: 'sk-recording' } } }, model: 'openai/gpt-5' }))
  return { command: bin('opencode'), args: ['run', 'hi'], env: { OPENCODE_DISABLE_AUTOUPDATE: '1' } }
})
await record('opencode-messages', 'OpenCode', 'opencode-ai', 'messages', (url, _home, work) => {
  writeFileSync(join(work, 'opencode.json'), JSON.stringify({ provider: { anthropic: { options: { baseURL: `${url}/v1`, apiKey: 'sk-ant-recording' } } }, model: 'anthropic/claude-sonnet-4-5' }))
  return { command: bin('opencode'), args: ['run', 'hi'], env: { OPENCODE_DISABLE_AUTOUPDATE: '1' } }
})
