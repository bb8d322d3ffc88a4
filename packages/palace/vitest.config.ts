import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'palace',
    include: ['test/**/*.test.ts'],
  },
})
