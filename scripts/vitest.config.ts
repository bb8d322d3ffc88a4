import { defineProject } from 'vitest/config'

// Tests of the repository's own scripts (the lint guard rails), on fixture trees they write.
export default defineProject({
  test: {
    name: 'scripts',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
  },
})
