import type { SimulatorInit } from '../index.ts'
import { vertexClaudeDialect, vertexDialect } from '../google/dialect.ts'
import { TokenBook } from '../google/tokens.ts'
import { IdMaker } from '../reply/format.ts'
import { RuleBook } from '../rules/book.ts'
import { seededRandom } from '../rules/random.ts'
import { RateWindows } from '../rules/rate-window.ts'
import { RequestRecords } from './records.ts'

/** Everything a running simulator shares between requests. */
export type SimulatorState = ReturnType<typeof createState>

/** A new simulator's state: `init`'s rules, seed and token lifetime. */
export function createState(init: SimulatorInit) {
  const tokens = new TokenBook(init.token_lifetime_s ?? 3600)
  const state = {
    rules: new RuleBook(),
    windows: new RateWindows(),
    log: new RequestRecords(),
    random: seededRandom(init.seed ?? 1),
    ids: new IdMaker(),
    /** Access tokens the OAuth2 endpoint issued (Vertex AI). */
    tokens,
    /** Vertex dialects by the method a path names, bound to this simulator's tokens. */
    vertex: {
      generateContent: vertexDialect(tokens, false), streamGenerateContent: vertexDialect(tokens, true),
      rawPredict: vertexClaudeDialect(tokens, false), streamRawPredict: vertexClaudeDialect(tokens, true),
    },
    /** Replaces every rule and empties the rate windows, so a new `rpm` script starts from a clean minute. */
    setRules(rules: unknown): void {
      state.rules.set(rules)
      state.windows.clear()
    },
  }
  if (init.rules !== undefined) state.rules.set(init.rules)
  return state
}
