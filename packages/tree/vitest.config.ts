import { fileURLToPath } from 'node:url'
import { defineProject } from 'vitest/config'

const root = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url))

export default defineProject({
  test: {
    name: 'tree',
    include: ['test/**/*.test.ts'],
    // The MCP tests spawn the built server; give the first spawn time to load.
    testTimeout: 60_000,
    // The repository tests run on both backends: one throwaway PostgreSQL cluster per run.
    globalSetup: ['../store/test/support/pg-global-setup.ts'],
    server: {
      deps: {
        // The host's tool registry and system-prompt registry (from the pinned host install)
        // are loaded through vite so that they share the root copy of cordis with our plugin.
        inline: [/@deepseek-ai\/dsh-/],
      },
    },
  },
  resolve: {
    alias: [
      { find: /^@deepseek-ai\/(cordis|schemastery|cosmokit)$/, replacement: root('node_modules/@deepseek-ai/$1') },
      { find: /^@deepseek-ai\/(dsh-tools|dsh-system-prompt|dsh-scope|dsh-session|dsh-invariants)$/, replacement: root('apps/playground/host/node_modules/@deepseek-ai/$1') },
    ],
  },
})
