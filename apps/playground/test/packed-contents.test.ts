import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { publishablePackages } from 'dsh-memory'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../src/host.js'

const execFileAsync = promisify(execFile)

/**
 * What a published package may contain: its build (JS, declarations, and source maps — they
 * carry `sourcesContent`, so stack traces can point at TypeScript without shipping src/), the
 * committed bin shims, the DSH bundle patch, SQL migrations (SQLite's and PostgreSQL's), README, licence and manifest. Never
 * sources, tests, fixtures, configs or build caches.
 */
const ALLOWED = [/^package\.json$/, /^README\.md$/, /^LICENSE$/, /^dist\/[\w./-]+\.(js|d\.ts|js\.map)$/, /^bin\/[\w.-]+\.js$/, /^cordis\.patch\.yml$/, /^migrations(-postgres)?\/[\w./-]+\.sql$/, /^migrations\/meta\/[\w.-]+\.json$/]

/** Files each package cannot work without (beyond package.json and README.md). */
const REQUIRED: Record<string, readonly string[]> = {
  '@dsh-memory/store': ['dist/index.js', 'dist/index.d.ts', 'dist/plugin.js', 'dist/plugin.d.ts'],
  '@dsh-memory/capture': ['dist/index.js', 'dist/plugin.js', 'cordis.patch.yml'],
  '@dsh-memory/distill': ['dist/index.js', 'dist/plugin.js', 'cordis.patch.yml'],
  // The in-process MiniLM provider's worker thread loads dist/minilm-worker.js by URL.
  '@dsh-memory/recall': ['dist/index.js', 'dist/plugin.js', 'dist/minilm-worker.js', 'cordis.patch.yml'],
  '@dsh-memory/cue-bank': ['dist/index.js', 'dist/plugin.js', 'cordis.patch.yml'],
  '@dsh-memory/palace': ['dist/index.js', 'dist/plugin.js', 'cordis.patch.yml'],
  '@dsh-memory/tree': ['dist/index.js', 'dist/plugin.js', 'dist/mcp.js', 'bin/dsh-memory-tree-mcp.js', 'cordis.patch.yml'],
  '@dsh-memory/preset': ['cordis.patch.yml'],
  '@dsh-memory/web': ['dist/index.js', 'dist/plugin.js'],
  'dsh-memory': ['dist/index.js', 'dist/bin.js', 'bin/dsh-memory.js'],
}

interface PackEntry {
  name: string
  files: { path: string }[]
}

describe('what npm publishes', () => {
  it('each package holds what it needs and nothing else', async () => {
    const names = [...publishablePackages(REPO_ROOT), 'dsh-memory']
    const { stdout } = await execFileAsync('npm', ['pack', '--dry-run', '--json', ...names.flatMap((name) => ['-w', name])], { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024 })
    const packed = JSON.parse(stdout) as PackEntry[]
    expect(packed.map((entry) => entry.name).sort()).toEqual(names.sort())
    for (const entry of packed) {
      const files = entry.files.map((file) => file.path)
      expect({ name: entry.name, unexpected: files.filter((path) => !ALLOWED.some((pattern) => pattern.test(path))) }).toEqual({ name: entry.name, unexpected: [] })
      expect({ name: entry.name, missing: ['package.json', 'README.md', 'LICENSE', ...(REQUIRED[entry.name] ?? ['(no expectation written for this package)'])].filter((path) => !files.includes(path)) }).toEqual({
        name: entry.name,
        missing: [],
      })
      // The licence text the manifest's "license": "MIT" refers to, the repository's own.
      const dir = join(REPO_ROOT, entry.name === 'dsh-memory' ? 'apps/cli' : `packages/${entry.name.split('/')[1]}`)
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8'), `${entry.name} LICENSE`).toBe(readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8'))
      // Every migration and the bundle patch a package declares in its manifest is shipped.
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { files: string[]; dsh?: { bundle?: { patch: string } } }
      for (const folder of ['migrations', 'migrations-postgres']) {
        if (manifest.files.includes(folder)) expect(files.some((path) => path.startsWith(`${folder}/`)), `${entry.name} ${folder}/`).toBe(true)
      }
      if (manifest.dsh?.bundle) expect(files).toContain(manifest.dsh.bundle.patch.replace(/^\.\//, ''))
    }
  })

  it('every package says which Node and DSH it runs on', () => {
    for (const name of [...publishablePackages(REPO_ROOT), 'dsh-memory']) {
      const dir = name === 'dsh-memory' ? 'apps/cli' : `packages/${name.split('/')[1]}`
      const manifest = JSON.parse(readFileSync(join(REPO_ROOT, dir, 'package.json'), 'utf8')) as { engines?: { node?: string }; peerDependencies?: Record<string, string>; dsh?: unknown }
      expect({ name, node: manifest.engines?.node }).toEqual({ name, node: '>=22.16' })
      // A DSH plugin (it shares the host's cordis) names the host versions it was verified on.
      if (manifest.peerDependencies?.['@deepseek-ai/cordis']) expect({ name, dsh: manifest.peerDependencies?.['@deepseek-ai/dsh'] }).toEqual({ name, dsh: '>=0.1.0-rc.8 <0.2.0' })
    }
  })
})
