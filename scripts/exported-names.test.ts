/**
 * One vocabulary (issue 11): no two exported types (interfaces, type aliases, classes, enums) of
 * the packages' sources share a name, so a name means one thing wherever it is read. Re-exports
 * and imports under another name are fine; a second declaration is not. Likewise a vocabulary list
 * (the failure classes, the switch names) is spelled out once (issue 39, item 3); types synonymous
 * with it are derived from it, which this cannot see, so the list's own literals are what is checked.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FAILURE_CLASSES, SWITCH_NAMES } from '../packages/routing/src/index.ts'

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

/** Every source file of every package, by its path under packages/. */
function packageSources(): { path: string; text: string }[] {
  const found: { path: string; text: string }[] = []
  for (const pkg of readdirSync(PACKAGES)) {
    let files: string[]
    try {
      files = sources(join(PACKAGES, pkg, 'src'))
    } catch {
      continue
    }
    for (const file of files) found.push({ path: file.slice(PACKAGES.length + 1), text: readFileSync(file, 'utf8') })
  }
  return found
}

/**
 * Runs of string literals written as a list (`'a', 'b'` in an array, `'a' | 'b'` in a union), comments
 * left out: each run's literals. A list of a vocabulary spelled again is such a run.
 */
function literalRuns(text: string): string[][] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
  const runs: string[][] = []
  let run: string[] = []
  let end = -1
  for (const match of code.matchAll(/'([a-z_]+)'|"([a-z_]+)"/g)) {
    if (end < 0 || !/^\s*[,|]\s*$/.test(code.slice(end, match.index))) {
      if (run.length > 0) runs.push(run)
      run = []
    }
    run.push((match[1] ?? match[2])!)
    end = match.index + match[0].length
  }
  if (run.length > 0) runs.push(run)
  return runs
}

/** A run is the list spelled again when most of it, and at least three of its words, are the list's (a list of other things that shares a few words is not). */
function isSpelledAgain(run: readonly string[], vocabulary: ReadonlySet<string>): boolean {
  const shared = run.filter((word) => vocabulary.has(word))
  return new Set(shared).size >= 3 && shared.length * 2 > run.length
}

describe('exported type names', () => {
  it('are unique across every package', () => {
    const declared = new Map<string, string[]>()
    for (const { path, text } of packageSources()) {
      for (const match of text.matchAll(DECLARATION)) {
        const list = declared.get(match[1]!) ?? []
        list.push(path)
        declared.set(match[1]!, list)
      }
    }
    expect(declared.size).toBeGreaterThan(100)
    const duplicates = [...declared].filter(([, files]) => files.length > 1).map(([name, files]) => `${name}: ${files.join(', ')}`)
    expect(duplicates).toEqual([])
  })
})

describe('vocabulary lists', () => {
  // One declaration per list (issue 39, item 3): anywhere else, a type is derived from it
  // (`(typeof LIST)[number]`, `satisfies readonly FailureClass[]`) and a list spreads or filters it.
  const lists = [
    { name: 'FAILURE_CLASSES', words: FAILURE_CLASSES, declaredIn: 'routing/src/failures/failure-class.ts' },
    { name: 'SWITCH_NAMES', words: SWITCH_NAMES, declaredIn: 'routing/src/adaptive/types.ts' },
  ]

  it('finds a list spelled again (the check can fail)', () => {
    const again = literalRuns(`const CLASSES = [\n  'none',\n  'credential', // the key\n  'quota',\n] as const\ntype Ended = 'timeout' | 'cancelled' | 'caller_fault'`)
    expect(again).toEqual([['none', 'credential', 'quota'], ['timeout', 'cancelled', 'caller_fault']])
    const classes = new Set<string>(FAILURE_CLASSES)
    expect(again.map((run) => isSpelledAgain(run, classes))).toEqual([false, true])
    expect(isSpelledAgain(['none', 'credential', 'quota', 'transient'], classes)).toBe(true)
  })

  it.each(lists)('$name is spelled out only where it is declared', ({ words, declaredIn }) => {
    const vocabulary = new Set<string>(words)
    const spelled = packageSources()
      .filter((source) => source.path !== declaredIn)
      .flatMap((source) => literalRuns(source.text).filter((run) => isSpelledAgain(run, vocabulary)).map((run) => `${source.path}: ${run.join(', ')}`))
    expect(spelled).toEqual([])
  })
})
