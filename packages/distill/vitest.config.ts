import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'distill',
    include: ['test/**/*.test.ts'],
    // The run's throwaway PostgreSQL cluster (the store project's): the state tests run on both backends.
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
