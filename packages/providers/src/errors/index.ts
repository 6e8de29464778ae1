/**
 * Failure classification: upstream error answers (any provider's dialect) and
 * answerless endings, normalized to `AttemptFailure` with the provider's wait hint.
 */
export { classifyFailure, networkFailure, timeoutFailure, cancelledFailure, type FailedAnswer } from './classify.ts'
export { parseDuration, type WaitHintOptions } from './wait-hints.ts'
