import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'distill',
    include: ['test/**/*.test.ts'],
  },
})
