import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'recall',
    include: ['test/**/*.test.ts'],
  },
})
