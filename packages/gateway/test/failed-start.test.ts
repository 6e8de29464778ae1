/**
 * A start that fails after the node started its embedded Postgres stops that Postgres again:
 * it is a process of its own, and a postmaster left behind keeps the data dir and the port.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const gatewayBin = fileURLToPath(new URL('../bin/switchboard.js', import.meta.url))

describe('a failed start', () => {
  it('stops the embedded Postgres it started, and says why in one line (p2p port taken)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-failed-start-'))
    await writeFile(join(dir, 'config.json'), JSON.stringify({ providers: { openai: { keys: [{ name: 'k1', value: 'sk-failed-start-1111', models: ['*'], weight: 1 }] } } }))
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const p2pPort = (taken.address() as { port: number }).port
    const env = { ...process.env }
    delete env.DATABASE_URL
    delete env.SWITCHBOARD_DATABASE_URL
    const pidFile = join(dir, '.switchboard', 'postgres', 'postmaster.pid')
    try {
      const child = spawn(process.execPath, [gatewayBin, 'serve', '--config', 'config.json', '--port', '0', '--host', '127.0.0.1', '--p2p-port', String(p2pPort), '--peers', '127.0.0.1:1', '--fleet-secret', 'a-fleet-secret-for-the-failed-start-test'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      child.stdout.on('data', (data: Buffer) => (output += data.toString()))
      child.stderr.on('data', (data: Buffer) => (output += data.toString()))
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
      expect(code, output).toBe(1)
      expect(output).toContain('embedded postgres: started')
      // One sentence naming the cause, no stack (libp2p's own error carries one per address).
      expect(output).toContain(`could not start: cannot start the p2p listener on 127.0.0.1:${p2pPort}: EADDRINUSE: address already in use`)
      expect(output).not.toMatch(/\n\s+at /)
      expect(existsSync(pidFile), `a postmaster still runs on ${dir}/.switchboard/postgres`).toBe(false)
    } finally {
      taken.close()
      // Against a node that leaves it running: stop it here rather than leak it into the run.
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGQUIT')
    }
  }, 60_000)
})
