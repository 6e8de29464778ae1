import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ERROR_CODES } from './errors.ts'

describe('error codes', () => {
  it('are listed in the README table exactly as the code defines them', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('### Error codes'))
    const rows = new Map<string, string>()
    for (const match of section.matchAll(/^\| `([a-z_]+)` \| ([^|]+) \|/gm)) rows.set(match[1]!, match[2]!.trim())
    expect([...rows.keys()].sort()).toEqual(Object.keys(ERROR_CODES).sort())
    for (const [code, { status }] of Object.entries(ERROR_CODES)) {
      const documented = rows.get(code)!
      // Codes whose status follows the upstream's say so in words; the rest give the number.
      if (/^\d+$/.test(documented)) expect(Number(documented)).toBe(status)
    }
  })
})
