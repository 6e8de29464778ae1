import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/ui/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'deploy/test/**/*.test.ts', 'scripts/**/*.test.ts'],
    testTimeout: 30_000,
    // Two files at once on two cores (vitest's default is cores - 1, one file at a time): the
    // multi-process files spend most of their time waiting on processes and timers, not on a core.
    maxWorkers: 2,
    hookTimeout: 60_000,
    // Nodes the suite starts run one worker each (a node's default is one per core): the tests of
    // workers ask for two (packages/gateway/test/workers*.test.ts), the rest test one event loop.
    env: { SWITCHBOARD_WORKERS: '1' },
    // One PostgreSQL for the run (DATABASE_URL, or a private embedded server).
    globalSetup: ['packages/store/test/global-setup.ts'],
  },
})
