import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'deploy/test/**/*.test.ts', 'scripts/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One PostgreSQL for the run (DATABASE_URL, or a private embedded server).
    globalSetup: ['packages/store/test/global-setup.ts'],
  },
})
