/** The CLI as a user meets it: bad files and flags exit non-zero with a sentence, never a stack. */
import { describe, expect, it } from 'vitest'
import { runCli, tempFile } from './harness.ts'

describe('switchboard serve', () => {
  it('exits 1 naming the JSON path and the reason of a bad config', async () => {
    const file = await tempFile('config.json', JSON.stringify({ providers: { openai: { keys: [{ name: 'a', value: 'sk-a', models: ['*'], weight: 1 }, { name: 'b', value: 'sk-b', models: ['*'], weight: 'heavy' }] } } }))
    const { code, stderr } = await runCli(['serve', '--config', file, '--port', '0'])
    expect(code).toBe(1)
    expect(stderr).toContain('providers.openai.keys[1].weight: expected number')
    expect(stderr).not.toMatch(/\n\s+at /)
    expect(stderr).not.toContain('sk-b')
  })

  it('exits 1 for a missing file and for broken JSON', async () => {
    expect(await runCli(['serve', '--config', '/nonexistent/config.json'])).toMatchObject({ code: 1, stderr: expect.stringContaining('file not found') })
    const broken = await tempFile('config.json', '{"providers": {')
    expect(await runCli(['serve', '--config', broken])).toMatchObject({ code: 1, stderr: expect.stringContaining('not valid JSON') })
  })

  it('exits 2 with usage for a bad port, a missing --config, or an unknown command', async () => {
    const file = await tempFile('config.json', JSON.stringify({ providers: {} }))
    expect(await runCli(['serve', '--config', file, '--port', 'eighty'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--port must be a whole number') })
    expect(await runCli(['serve'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--config <file> is required') })
    expect(await runCli(['launch'])).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command "launch"') })
  })
})
