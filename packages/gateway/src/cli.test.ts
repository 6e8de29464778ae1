/** The CLI's checks that run before anything starts (the process-level tests are in test/cli.test.ts). */
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { main } from './cli.ts'

const config = {
  providers: { openai: { keys: [{ name: 'prod-1', value: 'env.OPENAI_KEY_1', models: ['*'], weight: 1 }] } },
  gateway_keys: [{ name: 'apps', value: 'env.GATEWAY_KEY_APP' }],
}

/** Env of a pod whose Secret was applied as deploy/k8s/secret.yaml ships it, except for `real`. */
function podEnv(real: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    SWITCHBOARD_FLEET_SECRET: 'replace-me-with-openssl-rand-hex-32',
    SWITCHBOARD_ADMIN_TOKENS: 'replace-me-admin-token:update,replace-me-viewer-token:view',
    GATEWAY_KEY_APP: 'replace-me-gateway-key-for-apps',
    DATABASE_URL: 'postgres://switchboard:replace-me@postgres:5432/switchboard',
    OPENAI_KEY_1: 'replace-me-sk-...',
    ...real,
  }
}

async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'sb-cli-'))
  const file = join(dir, 'config.json')
  await writeFile(file, JSON.stringify(config))
  let stderr = ''
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk)
    return true
  })
  const code = await main(['serve', '--config', file, '--port', '0', ...argv], env)
  return { code, stderr }
}

afterEach(() => {
  vi.restoreAllMocks()
})

// Regression (issue 37): a pod started with the template Secret ran with a guessable fleet
// secret and admin tokens.
describe('switchboard serve with replace-me placeholders', () => {
  it('refuses to start, exits 1 as for a bad config, and names every variable that holds one', async () => {
    const { code, stderr } = await run([], podEnv())
    expect(code).toBe(1)
    expect(stderr).toContain('SWITCHBOARD_FLEET_SECRET, SWITCHBOARD_ADMIN_TOKENS, DATABASE_URL, GATEWAY_KEY_APP, OPENAI_KEY_1 still hold the "replace-me" placeholder')
    expect(stderr).not.toMatch(/\n\s+at /)
  })

  it('names the flag when the placeholder came as one', async () => {
    const real = { SWITCHBOARD_FLEET_SECRET: 'a0b1c2d3e4f5a6b7c8d9', SWITCHBOARD_ADMIN_TOKENS: 'admin-token-0123456789:update', GATEWAY_KEY_APP: 'gateway-key-0123456789', DATABASE_URL: 'postgres://switchboard:s3cret@postgres:5432/switchboard', OPENAI_KEY_1: 'sk-real' }
    const { code, stderr } = await run(['--fleet-secret', 'replace-me'], podEnv(real))
    expect(code).toBe(1)
    expect(stderr).toContain('--fleet-secret still holds the "replace-me" placeholder')
  })

  it('names SWITCHBOARD_DATABASE_URL when the URL came from it', async () => {
    const real = { SWITCHBOARD_FLEET_SECRET: 'a0b1c2d3e4f5a6b7c8d9', SWITCHBOARD_ADMIN_TOKENS: 'admin-token-0123456789:update', GATEWAY_KEY_APP: 'gateway-key-0123456789', OPENAI_KEY_1: 'sk-real', DATABASE_URL: '' }
    const { code, stderr } = await run([], { ...podEnv(real), SWITCHBOARD_DATABASE_URL: 'postgres://switchboard:replace-me@db/switchboard' })
    expect(code).toBe(1)
    expect(stderr).toContain('SWITCHBOARD_DATABASE_URL still holds')
  })
})
