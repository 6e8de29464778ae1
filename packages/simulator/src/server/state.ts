import type { IdMaker } from '../reply/format.ts'
import type { RuleBook } from '../rules/book.ts'
import type { RateWindows } from '../rules/rate-window.ts'
import type { RequestRecords } from './records.ts'
import type { Dialect } from '../dialects/dialect.ts'
import type { TokenBook } from '../google/tokens.ts'

/** Everything a running simulator shares between requests. */
export interface SimulatorState {
  rules: RuleBook
  windows: RateWindows
  log: RequestRecords
  random: () => number
  ids: IdMaker
  /** Access tokens the OAuth2 endpoint issued (Vertex AI). */
  tokens: TokenBook
  /** Vertex dialects by the method a path names, bound to this simulator's tokens. */
  vertex: Record<'generateContent' | 'streamGenerateContent' | 'rawPredict' | 'streamRawPredict', Dialect>
}
