import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'e2e',
    include: ['e2e/**/*.e2e.test.ts', 'test/**/*.test.ts'],
    // Real host boots and plugin installs (a native build on first install) take time.
    testTimeout: 240_000,
    hookTimeout: 600_000,
    globalSetup: ['e2e/global-setup.ts'],
  },
})
