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
    // `fileParallelism: false` in a project is not enough: vitest's forks pool reads it only
    // from the root config, so with the root's two workers two of these files would overlap.
    // One fork runs the files in turn (modules are still reset between files).
    sequence: { groupOrder: 1 },
    fileParallelism: false,
    poolOptions: { forks: { singleFork: true } },
  },
})
