import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'reliability',
    include: ['test/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // The crash and concurrency suites measure what happens to many processes sharing two
    // cores. Run them after every other project (not alongside the e2e host boots) and one
    // file at a time, so what they show is the product under its own load, not CI's.
    sequence: { groupOrder: 1 },
    fileParallelism: false,
  },
})
