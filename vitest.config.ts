import { defineConfig } from 'vitest/config'

// One run covers every workspace: unit and plugin tests live beside each package,
// end-to-end tests (real DSH host) in apps/playground/e2e. Filter with
// `npm test -- <file filter>` or `npm test -- -t "<test name>"`.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'scripts'],
  },
})
