/** design.md's layering: the gateway composes and records; Postgres is the store's (it exports `DatabasePool`). */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const source = fileURLToPath(new URL('.', import.meta.url))

function files(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(directory, entry.name)) : entry.name.endsWith('.ts') ? [join(directory, entry.name)] : [],
  )
}

describe('gateway layering', () => {
  it('imports no pg: database types come from @switchboard/store', () => {
    const offenders = files(source).filter((file) => /from ['"]pg['"]/.test(readFileSync(file, 'utf8')))
    expect(offenders.map((file) => file.slice(source.length))).toEqual([])
  })
})
