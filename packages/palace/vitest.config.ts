import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'palace',
    include: ['test/**/*.test.ts'],
    // The archive index tests run on both backends: one throwaway PostgreSQL cluster per run.
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
  },
})
