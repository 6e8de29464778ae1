/**
 * design.md's layering: the gateway composes and records; Postgres is the store's (it exports
 * `DatabasePool`); routing decides (issue 35, item 2: the engine runs attempts and asks routing's
 * router about each through the dispatch, two calls per attempt, and holds no rule of its own).
 */
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

  it('runs attempts without a rule of routing\'s: the engine imports types alone from @switchboard/routing', () => {
    // The files that run a request's attempts (registry.ts binds keys to models with routing's keyServesModel, once per config).
    const inference = ['engine.ts', 'attempt.ts', 'stream-guard.ts', 'render.ts'].map((name) => join(source, 'inference', name))
    const offenders = inference.filter((file) => /import\s+\{[^}]*\}\s+from\s+['"]@switchboard\/routing['"]/.test(readFileSync(file, 'utf8').replace(/import\s+type\s+\{[^}]*\}\s+from\s+['"]@switchboard\/routing['"]/g, '')))
    expect(offenders.map((file) => file.slice(source.length))).toEqual([])
  })

  it('asks routing once for each attempt and once for its outcome: the dispatch\'s next and report each make one call to the router', () => {
    const file = readFileSync(join(source, 'dispatch', 'dispatcher.ts'), 'utf8')
    // A request's dispatch: the class the dispatcher makes per request.
    const dispatcher = file.slice(file.indexOf('class RequestDispatch'))
    const body = (method: string) => {
      const found = new RegExp(`\\n( +)${method}\\(`).exec(dispatcher)!
      return dispatcher.slice(found.index, dispatcher.indexOf(`\n${found[1]}}`, found.index + 1))
    }
    expect(body('next').match(/\broute\.\w+\(/g)).toEqual(['route.next('])
    expect(body('report').match(/\broute\.\w+\(/g)).toEqual(['route.report('])
    // ...and nothing else of routing's runs there: no balancer, holds or sessions touched directly.
    expect(`${body('next')}${body('report')}`).not.toMatch(/\b(balancer|holds|sessions|backoffs)\./)
  })
})
