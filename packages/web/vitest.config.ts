import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'web',
    include: ['test/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // The run's throwaway PostgreSQL cluster (the store project's): the browser over a PostgreSQL store.
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
