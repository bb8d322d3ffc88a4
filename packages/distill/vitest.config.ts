import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'distill',
    include: ['test/**/*.test.ts'],
    // A PostgreSQL test opens a fresh schema (the store's migrations) first: on a loaded 2-core
    // machine running two files at a time that exceeds vitest's 5 s default. A limit, not a target.
    testTimeout: 30_000,
    // The run's throwaway PostgreSQL cluster (the store project's): the state tests run on both backends.
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
