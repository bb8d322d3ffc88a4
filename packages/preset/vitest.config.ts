import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'preset',
    include: ['test/**/*.test.ts'],
  },
})
