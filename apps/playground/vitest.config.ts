import { defineProject } from 'vitest/config'

export default defineProject({
  test: {
    name: 'e2e',
    include: ['e2e/**/*.e2e.test.ts', 'test/**/*.test.ts'],
    // Real host boots and plugin installs (a native build on first install) take time.
    testTimeout: 240_000,
    hookTimeout: 600_000,
    // The packed tarballs, and one throwaway PostgreSQL cluster (the store project's) for the
    // hosts whose store rows point at a database (`postgresDatabase` in e2e/helpers.ts).
    globalSetup: ['e2e/global-setup.ts', '../../packages/store/test/support/pg-global-setup.ts'],
  },
})
