/**
 * Failure classification: upstream error answers (any provider's dialect) and
 * answerless endings, normalized to `AttemptFailure` with the provider's wait hint.
 */
export { attemptFailure, classifyFailure, networkFailure, timeoutFailure, cancelledFailure, type FailedAnswer } from './classify.ts'
export { parseWaitHint, parseDuration, type WaitHintOptions } from './wait-hints.ts'
