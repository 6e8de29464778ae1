import type { IdMaker } from '../reply/format.ts'
import type { RuleBook } from '../rules/book.ts'
import type { RateWindows } from '../rules/rate-window.ts'
import type { RequestRecords } from './records.ts'

/** Everything a running simulator shares between requests. */
export interface SimulatorState {
  rules: RuleBook
  windows: RateWindows
  log: RequestRecords
  random: () => number
  ids: IdMaker
}
