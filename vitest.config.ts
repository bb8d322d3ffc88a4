import { availableParallelism } from 'node:os'
import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'
import { defineConfig } from 'vitest/config'

/**
 * Without timings from an earlier run (a fresh CI clone), vitest starts the largest files
 * first; size says little here, and a minute-long end-to-end file started last leaves the other
 * worker idle at the end. Start the e2e project's files (each a host boot or more) first, so the
 * many short unit files fill the gaps. With an earlier run's timings (longest first), vitest's
 * own order is kept.
 */
class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const timed = (spec: TestSpecification) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`) !== undefined
    if (sorted.every(timed)) return sorted
    const e2e = (spec: TestSpecification) => spec.project.name === 'e2e'
    return [...sorted.filter(e2e), ...sorted.filter((spec) => !e2e(spec))]
  }
}

// One run covers every workspace: unit and plugin tests live beside each package,
// end-to-end tests (real DSH host) in apps/playground/e2e. Filter with
// `npm test -- <file filter>` or `npm test -- -t "<test name>"`.
export default defineConfig({
  test: {
    projects: ['packages/*', 'apps/*', 'scripts'],
    // Vitest's default is one worker less than the cores: ONE on a 2-core CI machine, so the
    // whole suite ran file after file while most e2e files only wait on child processes (host
    // boots, profile installs, Chromium). Two files at a time overlap that waiting. Tests must
    // not share mutable state across files (each makes its own temp dirs, ports and schemas);
    // the reliability project still runs alone, one file at a time (its vitest.config.ts).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: SlowFirstSequencer },
  },
})
