import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'web',
    include: ['test/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 300_000,
  },
})
