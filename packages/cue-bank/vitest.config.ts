import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'cue-bank',
    include: ['test/**/*.test.ts'],
    // A PostgreSQL test opens a fresh schema (the store's migrations) first: on a loaded 2-core
    // machine running two files at a time that exceeds vitest's 5 s default. A limit, not a target.
    testTimeout: 30_000,
    // A throwaway PostgreSQL cluster for the tests that run on both backends (inject('pgUrl')).
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
