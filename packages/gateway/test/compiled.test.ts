/**
 * The compiled start (issue 38, item 2): `bin/switchboard.js` runs the bundle bin/compiled.mjs
 * builds, rebuilding it when a source is newer, and the sources through tsx when told to; the
 * first start of a build leaves V8's code cache, which later starts take.
 */
import { isAscii } from 'node:buffer'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUNDLE, CODE_CACHE, buildBundle, bundleIsFresh, isWrapped } from '../bin/compiled.mjs'
import { startGateway, startSimulator, type GatewayProcess, type SimulatorProcess } from './harness.ts'

const source = join(fileURLToPath(new URL('.', import.meta.url)), '../../routing/src/index.ts')

let simulator: SimulatorProcess
beforeAll(async () => {
  simulator = await startSimulator()
})
afterAll(async () => {
  await simulator?.stop()
})

async function served(gateway: GatewayProcess): Promise<unknown> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) })
  expect(response.status).toBe(200)
  return ((await response.json()) as { extra_fields: { provider: string } }).extra_fields.provider
}

const config = () => ({ providers: { openai: { keys: [{ name: 'k1', value: 'sk-compiled-1111', models: ['*'], weight: 1 }], network_config: { base_url: simulator.url } } } })

describe('the compiled start', () => {
  it('is rebuilt when a source is newer than the bundle, and fresh after', async () => {
    await buildBundle()
    expect(bundleIsFresh()).toBe(true)
    expect(existsSync(CODE_CACHE), 'a new build drops the code cache of the one before').toBe(false)
    // Read as latin1, faster than UTF-8: a non-ASCII character (in a regular expression, say) slows every start.
    expect(isAscii(readFileSync(BUNDLE)), 'the bundle is ASCII').toBe(true)
    const before = statSync(source)
    const bundleAt = statSync(BUNDLE).mtime
    try {
      utimesSync(source, before.atime, new Date(bundleAt.getTime() + 60_000))
      expect(bundleIsFresh(), 'a source newer than the bundle').toBe(false)
    } finally {
      utimesSync(source, before.atime, before.mtime)
    }
    expect(bundleIsFresh()).toBe(true)
  })

  it('serves from the bundle by default, and from the sources with SWITCHBOARD_FROM_SOURCE=1', async () => {
    const compiled = await startGateway(config())
    try {
      expect(compiled.output()).toMatch(/"code":"bundle"[^\n]*switchboard starting on/)
      expect(await served(compiled)).toBe('openai')
    } finally {
      await compiled.stop()
    }
    const fromSource = await startGateway(config(), { SWITCHBOARD_FROM_SOURCE: '1' })
    try {
      expect(fromSource.output()).toMatch(/"code":"source"[^\n]*switchboard starting on/)
      expect(await served(fromSource)).toBe('openai')
    } finally {
      await fromSource.stop()
    }
  }, 60_000)

  it('leaves the code cache of its build at its first start, and the next load takes it', () => {
    // After the test above: its bundled start was the first of this build.
    const build = /^\/\* switchboard build (\S+) \*\//.exec(readFileSync(BUNDLE, 'latin1').slice(0, 200))?.[1]
    expect(build).toBeDefined()
    expect(readFileSync(CODE_CACHE).toString('latin1', 0, 100).split('\n')[0]).toBe(`${build} started`)
    const compiled = new URL('../bin/compiled.mjs', import.meta.url).href
    const script = `const bundle = (await import(${JSON.stringify(compiled)})).loadBundle(); console.log(JSON.stringify({ cached: bundle.cached, main: typeof bundle.exports.main }))`
    const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))
    expect(loaded).toEqual({ cached: true, main: 'function' })
  }, 30_000)

  it('is its own function (no wrapped copy of it at load); a bundle of the form before still loads, and is built again', () => {
    const text = readFileSync(BUNDLE, 'latin1')
    expect(text.slice(0, 200)).toMatch(/^\/\* switchboard build \S+ \*\/ \(function \(exports, require, module, __filename, __dirname, __switchboardImport\) \{'use strict';/)
    expect(text.trimEnd().endsWith('\n})')).toBe(true)
    expect(isWrapped(BUNDLE)).toBe(true)
    // The form before (issue 38, item 2): the modules at the top level, the loader wrapping them.
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-bundle-'))
    try {
      const earlier = join(dir, 'switchboard.cjs')
      writeFileSync(earlier, text.replace(/^(\/\* switchboard build \S+ \*\/) \(function \([^)]*\) \{'use strict';/, '$1 ').replace(/\n\}\)\n$/, ''), 'latin1')
      expect(isWrapped(earlier), 'a bundle of the form before is not fresh').toBe(false)
      const compiled = new URL('../bin/compiled.mjs', import.meta.url).href
      const script = `const bundle = (await import(${JSON.stringify(compiled)})).loadBundle(${JSON.stringify(earlier)}); console.log(JSON.stringify({ main: typeof bundle.exports.main }))`
      expect(JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))).toEqual({ main: 'function' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)
})
