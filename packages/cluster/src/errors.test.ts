import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { clusterErrorCodes } from './errors.ts'

describe('cluster error codes', () => {
  it('are exactly the ones the README table documents', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const table = readme.slice(readme.indexOf('## Errors'))
    const documented = [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1])
    expect(documented.sort()).toEqual([...clusterErrorCodes].sort())
  })
})
