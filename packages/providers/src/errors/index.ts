/** Failure classification: error answers in any provider's dialect, and answerless endings, as `AttemptFailure`. */
export { attemptFailure, classifyFailure, networkFailure, timeoutFailure, cancelledFailure, type FailedAnswer } from './classify.ts'
export { resetDuration, resetTime } from './wait-hints.ts'
