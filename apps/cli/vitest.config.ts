import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'cli',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    // One throwaway PostgreSQL cluster per run (the store project's), for migrate and --database-url.
    globalSetup: ['../../packages/store/test/support/pg-global-setup.ts'],
  },
})
