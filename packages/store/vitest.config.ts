import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'store',
    include: ['test/**/*.test.ts'],
    // A PostgreSQL test opens a fresh schema (the store's migrations) first: on a loaded 2-core
    // machine running two files at a time that exceeds vitest's 5 s default. A limit, not a target.
    testTimeout: 30_000,
    // One throwaway PostgreSQL cluster per run for the contract tests (test/contract/).
    globalSetup: ['test/support/pg-global-setup.ts'],
  },
})
