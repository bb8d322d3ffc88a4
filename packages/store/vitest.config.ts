import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'store',
    include: ['test/**/*.test.ts'],
    // One throwaway PostgreSQL cluster per run for the contract tests (test/contract/).
    globalSetup: ['test/support/pg-global-setup.ts'],
  },
})
