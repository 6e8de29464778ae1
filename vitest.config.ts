import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/ui/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'deploy/test/**/*.test.ts', 'scripts/**/*.test.ts'],
    testTimeout: 30_000,
    // Two files at once on two cores (vitest's default is cores - 1, one file at a time): the
    // multi-process files spend most of their time waiting on processes and timers, not on a core.
    maxWorkers: 2,
    hookTimeout: 60_000,
    // One PostgreSQL for the run (DATABASE_URL, or a private embedded server).
    globalSetup: ['packages/store/test/global-setup.ts'],
  },
})
