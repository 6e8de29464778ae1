/**
 * Trials of failed routes: one request per due time across the whole fleet tries a route that
 * failed on live traffic, on a rung that climbs with each failed trial; a served trial recovers
 * the route on every node. Spec: issue 35, item 8; design.md, "Cluster model".
 */
export { createTrials, type Trials, type TrialsInit } from './trials.ts'
export type { TrialEntry } from './entry.ts'
export { TRIAL_CLAIM_SETTLE_MS, TRIAL_MAX_WAIT_MS, TRIAL_TOP_RUNG, trialWaitMs } from './timing.ts'
