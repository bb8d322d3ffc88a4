#!/usr/bin/env node
// The import guard rails CI runs before the tests (`npm run lint`), over every package and app:
//   1. no `@deepseek-ai/*` import (type-only included) under any `src/core/`: the core is a
//      plain library, the adapter alone talks to the host;
//   2. no import cycle inside a package, type-only imports included (a type cycle still
//      couples two modules and becomes a run-time cycle at the first value import);
//   3. one suffix for the relative imports of a package (`.ts`, `.js` or none), so files move
//      between packages and build setups without surprises.
// The module graph and the cycles come from dependency-cruiser; rule 3 reads the same graph.
// Usage: node scripts/lint-imports.mjs [--root DIR]   (exit 1 and one line per finding)
import { existsSync, readdirSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cruise } from 'dependency-cruiser'

const args = process.argv.slice(2)
const rootIndex = args.indexOf('--root')
const root = resolve(rootIndex >= 0 ? args[rootIndex + 1] : join(fileURLToPath(import.meta.url), '..', '..'))

/** The source folders of every workspace package: `<group>/<name>/<folder>`. */
function sourceDirs() {
  const dirs = []
  for (const group of ['packages', 'apps']) {
    const groupDir = join(root, group)
    if (!existsSync(groupDir)) continue
    for (const name of readdirSync(groupDir).sort()) {
      for (const folder of ['src', 'test', 'e2e']) {
        const dir = join(group, name, folder)
        if (existsSync(join(root, dir))) dirs.push(dir)
      }
    }
  }
  return dirs
}

const RULES = {
  forbidden: [
    {
      name: 'core-imports-host',
      comment: 'src/core/ is a plain library: no @deepseek-ai/* import, type-only included',
      severity: 'error',
      from: { path: '(^|/)src/core/' },
      to: { path: '(^|/)@deepseek-ai/' },
    },
    {
      name: 'import-cycle',
      comment: 'no import cycles, type-only imports included',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
}

/** `packages/x` of a module path, or undefined outside a package. */
function packageOf(path) {
  const match = /^((?:packages|apps)\/[^/]+)\//.exec(path)
  return match?.[1]
}

/** The suffix family of a relative specifier: `.ts` (also .tsx, .mts), `.js` (also .jsx, .mjs) or none. */
function suffixOf(specifier) {
  if (/\.(?:ts|tsx|mts|cts)$/.test(specifier)) return '.ts'
  if (/\.(?:js|jsx|mjs|cjs)$/.test(specifier)) return '.js'
  if (/\.[a-z]+$/i.test(specifier) && !/\.(?:ts|js)x?$/.test(specifier)) return undefined // .json, .css, .sql: data, not modules
  return 'none'
}

async function main() {
  const dirs = sourceDirs()
  if (dirs.length === 0) {
    console.error(`lint-imports: no packages/*/src or apps/*/src below ${root}`)
    return 2
  }
  const previous = process.cwd()
  process.chdir(root)
  let result
  try {
    result = await cruise(
      dirs,
      {
        validate: true,
        ruleSet: RULES,
        tsPreCompilationDeps: true,
        doNotFollow: { path: 'node_modules' },
        exclude: { path: '(^|/)(dist|node_modules/\\.cache)/' },
        enhancedResolveOptions: {
          extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.jsx', '.json'],
          extensionAlias: { '.js': ['.ts', '.tsx', '.js'], '.mjs': ['.mts', '.mjs'] },
        },
      },
      undefined,
      undefined,
    )
  } finally {
    process.chdir(previous)
  }
  const output = result.output
  const findings = []
  for (const violation of output.summary.violations ?? []) {
    if (violation.rule.name === 'import-cycle') {
      const cycle = (violation.cycle ?? []).map((step) => (typeof step === 'string' ? step : step.name))
      findings.push(`import-cycle: ${[violation.from, ...cycle].join(' -> ')}`)
    } else {
      findings.push(`${violation.rule.name}: ${violation.from} imports ${violation.to}`)
    }
  }
  // Rule 3: one suffix family per package for relative imports.
  const suffixes = new Map()
  for (const module of output.modules) {
    const owner = packageOf(module.source)
    if (!owner) continue
    for (const dependency of module.dependencies) {
      if (!dependency.module.startsWith('.')) continue
      const suffix = suffixOf(dependency.module)
      if (!suffix) continue
      const seen = suffixes.get(owner) ?? new Map()
      if (!seen.has(suffix)) seen.set(suffix, `${module.source} imports '${dependency.module}'`)
      suffixes.set(owner, seen)
    }
  }
  for (const [owner, seen] of [...suffixes].sort(([a], [b]) => a.localeCompare(b))) {
    if (seen.size > 1) findings.push(`mixed-import-suffix: ${owner} uses ${[...seen.keys()].join(' and ')} (${[...seen.values()].join('; ')})`)
  }
  // A cycle is reported once per module on it; say each cycle once.
  const unique = [...new Set(findings)]
  for (const line of unique) console.error(line)
  const modules = output.modules.filter((module) => packageOf(module.source)).length
  console.log(`lint-imports: ${modules} modules in ${dirs.length} folders under ${relative(process.cwd(), root) || '.'}: ${unique.length === 0 ? 'clean' : `${unique.length} finding(s)`}`)
  return unique.length === 0 ? 0 : 1
}

process.exitCode = await main()
