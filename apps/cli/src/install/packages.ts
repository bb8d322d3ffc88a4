/**
 * Which of our packages go into a profile and where they come from: the npm registry (an
 * installed CLI), tarballs packed from this checkout, or a folder of tarballs (`--from`). The
 * end-to-end harness packs through {@link packWorkspaces} too, so tests install exactly what
 * the command installs.
 */
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { InstallError } from './errors.ts'

const execFileAsync = promisify(execFile)

/** The npm scope of every plugin package. */
export const SCOPE = '@dsh-memory'

/** Plugins `--plugins` accepts (each has a DSH bundle patch); `preset` mounts all the others. */
export const PLUGIN_NAMES: readonly string[] = ['preset', 'capture', 'distill', 'recall', 'cue-bank', 'palace', 'tree']

/**
 * `--plugins` value → package names to `dsh plugin add`.
 * @throws InstallError `invalid-argument` naming the unknown plugin
 */
export function parsePluginList(value: string): string[] {
  const names = value
    .split(',')
    .map((name) => name.trim().replace(/^@dsh-memory\//, ''))
    .filter(Boolean)
  if (names.length === 0) throw new InstallError('invalid-argument', '--plugins is empty', `name one or more of ${PLUGIN_NAMES.join(', ')} (comma-separated)`)
  for (const name of names) {
    if (!PLUGIN_NAMES.includes(name)) throw new InstallError('invalid-argument', `--plugins: unknown plugin ${JSON.stringify(name)}`, `use ${PLUGIN_NAMES.join(', ')} (comma-separated)`)
  }
  return [...new Set(names)].map((name) => `${SCOPE}/${name}`)
}

/**
 * The monorepo root when this code runs from a checkout (apps/cli/dist or apps/cli/src),
 * else undefined (an install from the registry).
 */
export function checkoutRoot(from: string = fileURLToPath(import.meta.url)): string | undefined {
  let folder = dirname(from)
  for (let depth = 0; depth < 5; depth++) {
    const manifest = join(folder, 'package.json')
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'dsh-memory-monorepo') return folder
      } catch {
        // not ours
      }
    }
    folder = dirname(folder)
  }
  return undefined
}

/** Names of the checkout's publishable packages (`packages/*` that are not private). */
export function publishablePackages(root: string): string[] {
  const names: string[] = []
  for (const folder of readdirSync(join(root, 'packages')).sort()) {
    const manifest = join(root, 'packages', folder, 'package.json')
    if (!existsSync(manifest)) continue
    const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; private?: boolean }
    if (!parsed.private) names.push(parsed.name)
  }
  return names
}

/**
 * `npm pack` workspace packages of the checkout into `outDir` (created if missing), as a user
 * would get them from the registry.
 * @returns package name → absolute tarball path.
 */
export async function packWorkspaces(root: string, names: readonly string[], outDir: string): Promise<Record<string, string>> {
  await mkdir(outDir, { recursive: true })
  const args = ['pack', '--json', '--pack-destination', resolve(outDir), ...names.flatMap((name) => ['-w', name])]
  let stdout: string
  try {
    ;({ stdout } = await execFileAsync('npm', args, { cwd: root, maxBuffer: 64 * 1024 * 1024 }))
  } catch (error) {
    throw new InstallError('no-tarballs', `npm pack failed in ${root}: ${(error as Error).message}`, 'run `npm run setup` in the checkout (the packages must be built), or pass --from <folder of tarballs>', { cause: error })
  }
  const packed = JSON.parse(stdout) as { name: string; filename: string }[]
  return Object.fromEntries(packed.map((entry) => [entry.name, join(resolve(outDir), entry.filename.replace(/^@/, '').replace('/', '-'))]))
}

/**
 * The tarballs in a folder, by package name, from npm pack's file names
 * (`dsh-memory-cue-bank-0.1.0.tgz` → `@dsh-memory/cue-bank`; `dsh-memory-0.1.0.tgz` is the CLI).
 * @throws InstallError `no-tarballs` when the folder is missing, has none, or has two versions of one package
 */
export function tarballsIn(dir: string): Record<string, string> {
  let files: string[]
  try {
    files = readdirSync(dir)
  } catch {
    throw new InstallError('no-tarballs', `--from ${dir} is not a readable folder`, 'pass the folder `npm pack … --pack-destination` wrote to')
  }
  const found: Record<string, string> = {}
  for (const file of files.sort()) {
    const match = /^dsh-memory-(.+?)-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\.tgz$/.exec(file)
    if (!match) continue
    const name = `${SCOPE}/${match[1]}`
    if (found[name]) throw new InstallError('no-tarballs', `--from ${dir} holds two tarballs of ${name}: ${found[name]} and ${file}`, 'keep one version of each package in the folder')
    found[name] = join(resolve(dir), file)
  }
  if (Object.keys(found).length === 0) throw new InstallError('no-tarballs', `--from ${dir} holds no @dsh-memory tarballs (dsh-memory-<package>-<version>.tgz)`, 'pack them with `npm pack -w @dsh-memory/<package> … --pack-destination <folder>`')
  return found
}
