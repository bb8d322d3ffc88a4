import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'cue-bank',
    include: ['test/**/*.test.ts'],
  },
})
