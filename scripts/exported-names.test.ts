/**
 * One vocabulary (issue 11): no two exported types (interfaces, type aliases, classes, enums) of
 * the packages' sources share a name, so a name means one thing wherever it is read. Re-exports
 * and imports under another name are fine; a second declaration is not.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const PACKAGES = join(import.meta.dirname, '..', 'packages')
const DECLARATION = /^export\s+(?:declare\s+)?(?:interface|type|class|enum|const\s+enum|abstract\s+class)\s+([A-Za-z0-9_$]+)/gm

function sources(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) sources(path, found)
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.test.ts')) found.push(path)
  }
  return found
}

describe('exported type names', () => {
  it('are unique across every package', () => {
    const declared = new Map<string, string[]>()
    for (const pkg of readdirSync(PACKAGES)) {
      let files: string[]
      try {
        files = sources(join(PACKAGES, pkg, 'src'))
      } catch {
        continue
      }
      for (const file of files) {
        for (const match of readFileSync(file, 'utf8').matchAll(DECLARATION)) {
          const list = declared.get(match[1]!) ?? []
          list.push(file.slice(PACKAGES.length + 1))
          declared.set(match[1]!, list)
        }
      }
    }
    expect(declared.size).toBeGreaterThan(100)
    const duplicates = [...declared].filter(([, files]) => files.length > 1).map(([name, files]) => `${name}: ${files.join(', ')}`)
    expect(duplicates).toEqual([])
  })
})
