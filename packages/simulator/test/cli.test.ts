import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../bin/simulator.js', import.meta.url))

describe('switchboard-simulator CLI', () => {
  it('loads rules from a file, announces its URL, serves, and exits cleanly on SIGTERM', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'simulator-cli-'))
    const rules = join(directory, 'rules.json')
    await writeFile(rules, JSON.stringify([{ provider: 'anthropic', fault: 'overloaded' }]))
    const child = spawn(process.execPath, [bin, '--port', '0', '--seed', '3', '--rules', rules], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8')
    const line = await new Promise<string>((resolve) => {
      child.stdout.on('data', (chunk: string) => {
        output += chunk
        if (output.includes('\n')) resolve(output.split('\n')[0] ?? '')
      })
    })
    const match = /^simulator listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line)
    expect(match).not.toBeNull()
    const response = await fetch(`${match![1]}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(response.status).toBe(529)
    child.kill('SIGTERM')
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)
  })

  it('refuses an invalid rules file with a message and exit code 1', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'simulator-cli-'))
    const rules = join(directory, 'rules.json')
    await writeFile(rules, JSON.stringify([{ fault: 'melted' }]))
    const child = spawn(process.execPath, [bin, '--rules', rules], { stdio: ['ignore', 'pipe', 'pipe'] })
    let errors = ''
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => { errors += chunk })
    const [code] = await once(child, 'exit')
    expect(code).toBe(1)
    expect(errors).toContain('unknown preset "melted"')
  })
})
