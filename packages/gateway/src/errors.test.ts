import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ERROR_CODES } from './errors.ts'

describe('error codes', () => {
  it('are listed in the docs/api.md table exactly as the code defines them', () => {
    const page = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8')
    const start = page.indexOf('\n## Error codes\n')
    expect(start).toBeGreaterThanOrEqual(0)
    // The section runs to the next heading of its level: later tables (the request log's fields) have code-like rows too.
    const next = page.indexOf('\n## ', start + 1)
    const section = page.slice(start, next < 0 ? undefined : next)
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
