import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'cue-bank',
    include: ['test/**/*.test.ts'],
    // A throwaway PostgreSQL cluster for the tests that run on both backends (inject('pgUrl')).
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
