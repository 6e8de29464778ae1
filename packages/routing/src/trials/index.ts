/** Trials of failed routes: one request per due time across the fleet; a served one recovers the route everywhere (issue 35, item 8). */
export { createTrials, type Trials, type TrialsInit } from './trials.ts'
export type { TrialEntry } from './entry.ts'
export { TRIAL_CLAIM_SETTLE_MS, TRIAL_MAX_WAIT_MS, TRIAL_TOP_RUNG, trialWaitMs } from './timing.ts'
