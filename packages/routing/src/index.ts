/**
 * @switchboard/routing — the pure core of Switchboard.
 *
 * Failure classes, retry and key-rotation planning, key selection. Nothing here
 * performs I/O or reads the clock or a random source on its own: time and
 * randomness are passed in, so every decision is an exact unit test.
 */
export * from './failures/failure-class.ts'
export * from './retries/backoff.ts'
export * from './retries/rotation.ts'
export * from './selection/weighted.ts'
export * from './holds/index.ts'
export * from './adaptive/index.ts'
export * from './planning/index.ts'
export * from './trials/index.ts'
