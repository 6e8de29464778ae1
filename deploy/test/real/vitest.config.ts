/** `npm run test:deploy` only: the deploy test is not part of `npm test` (root vitest.config.ts). */
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    root: fileURLToPath(new URL('../../..', import.meta.url)),
    include: ['deploy/test/real/**/*.deploy.ts'],
    // One fleet, one engine: steps run in order, nothing in parallel.
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 1_200_000,
    reporters: ['verbose'],
  },
})
