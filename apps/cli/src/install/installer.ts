/**
 * `dsh-memory install` / `uninstall` as plain functions over a DSH home: find the launcher,
 * let DSH create the profile, pin our tarballs in the profile's pnpm settings, `dsh plugin
 * add`, then prove it — `--dump-config` lists our rows and a boot of the profile loads them.
 * The end-to-end harness installs through {@link installPlugins} too, so the tests exercise
 * exactly this path.
 */
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { parse } from 'yaml'
import { InstallError } from './errors.ts'
import { checkTools, findLauncher, type Launcher, runLauncher, type RunResult } from './launcher.ts'
import { checkoutRoot, packWorkspaces, publishablePackages, SCOPE, tarballsIn } from './packages.ts'
import { bundleRows, type LoaderRow, missingRows } from './rows.ts'
import { checkScaffold, mergeWorkspaceYaml, readOverrides, removeOverrides, WORKSPACE_FILE } from './workspace-yaml.ts'

/** Folder inside the profile that keeps the tarballs its overrides point at (pnpm needs them on every later install). */
export const TARBALL_FOLDER = 'dsh-memory-packages'

/** Options shared by install and uninstall. */
export interface ProfileTarget {
  /** The DSH home (`--dsh-home`, else `$DSH_HOME`, else `~/.dsh`). */
  readonly dshHome?: string
  readonly profile: string
  /** `--dsh <path>`; default: `dsh` on PATH. */
  readonly dsh?: string
  /** Environment of the launcher (PATH, DSH_HOME is set from `dshHome`). */
  readonly env?: NodeJS.ProcessEnv
  /** Where `dsh` runs (its workspace; the verification boot writes nothing there). */
  readonly cwd?: string
  /** Progress lines (what is being done now). */
  readonly onStep?: (line: string) => void
}

/** Options of {@link installPlugins}. */
export interface InstallOptions extends ProfileTarget {
  /** Package names to `dsh plugin add` (see `parsePluginList`). */
  readonly packages: readonly string[]
  /** Tarballs by package name; default: `--from`, else packed from this checkout, else the registry. */
  readonly tarballs?: Readonly<Record<string, string>>
  /** A folder of tarballs (`--from`). */
  readonly from?: string
  /** Write the DSH scaffold lines a broken profile lacks instead of stopping. */
  readonly repair?: boolean
  /** Skip the verification boot (the rows are still checked in `--dump-config`). */
  readonly skipBoot?: boolean
}

/** What an install did and found. */
export interface InstallReport {
  readonly profile: string
  readonly profileDir: string
  readonly dshHome: string
  readonly launcher: string
  readonly node: string
  readonly pnpm: string
  readonly createdProfile: boolean
  readonly source: 'registry' | 'checkout' | 'folder' | 'given'
  readonly packages: readonly string[]
  readonly overrides: Readonly<Record<string, string>>
  readonly rows: readonly LoaderRow[]
  /** The database the verification boot opened, or null when the boot was skipped. */
  readonly database: string | null
}

/** What an uninstall removed and kept. */
export interface UninstallReport {
  readonly profile: string
  readonly profileDir: string
  readonly removed: readonly string[]
  readonly overridesRemoved: readonly string[]
  /** The data dir, left in place on purpose. */
  readonly dataDirKept: string
}

/** `--dsh-home`, else `$DSH_HOME`, else `~/.dsh`. */
export function resolveDshHome(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const value = option ?? env.DSH_HOME
  return value ? resolve(value.replace(/^~(?=$|\/)/, homedir())) : join(homedir(), '.dsh')
}

interface Session {
  readonly dshHome: string
  readonly profileDir: string
  readonly launcher: Launcher
  readonly env: NodeJS.ProcessEnv
  readonly cwd: string
  readonly step: (line: string) => void
  readonly tools: { node: string; pnpm: string }
}

async function open(target: ProfileTarget): Promise<Session> {
  if (!/^[\w.-]+$/.test(target.profile) || target.profile.startsWith('.')) {
    throw new InstallError('invalid-argument', `--profile ${JSON.stringify(target.profile)} is not a profile name`, 'use letters, digits, `-`, `_` or `.` (e.g. web, headless)')
  }
  const dshHome = resolveDshHome(target.dshHome, target.env ?? process.env)
  const env = { ...(target.env ?? process.env), DSH_HOME: dshHome }
  const cwd = target.cwd ?? process.cwd()
  const launcher = findLauncher(target.dsh, env, cwd)
  const tools = await checkTools(launcher, env, cwd)
  return { dshHome, profileDir: join(dshHome, 'profiles', target.profile), launcher, env, cwd, step: target.onStep ?? (() => {}), tools }
}

function dsh(session: Session, args: readonly string[], timeoutMs = 600_000): Promise<RunResult> {
  return runLauncher(session.launcher, args, { cwd: session.cwd, env: session.env, timeoutMs })
}

function tail(result: RunResult, lines = 25): string {
  return `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-lines).join('\n')
}

/** Install packages into a profile and verify that the host loads them. */
export async function installPlugins(options: InstallOptions): Promise<InstallReport> {
  const session = await open(options)
  const { profileDir, step } = session
  const profile = options.profile

  // 1. The profile: DSH scaffolds it (manifest, user patch layer, pnpm settings) on first use.
  let createdProfile = false
  if (!existsSync(join(profileDir, 'package.json'))) {
    step(`creating profile ${profile} with dsh`)
    const init = await dsh(session, ['plugin', '--profile', profile, 'list'])
    if (init.code !== 0 || !existsSync(join(profileDir, 'package.json'))) {
      throw new InstallError('profile-missing', `dsh could not create profile ${profile} at ${profileDir} (exit ${init.code}):\n${tail(init)}`, `run \`dsh plugin --profile ${profile} list\` to see why, then rerun`)
    }
    createdProfile = true
  }
  const workspaceFile = join(profileDir, WORKSPACE_FILE)
  const before = existsSync(workspaceFile) ? readFileSync(workspaceFile, 'utf8') : ''
  const missing = checkScaffold(before, workspaceFile)
  if (missing.length > 0 && !options.repair) {
    throw new InstallError(
      'profile-broken',
      `profile ${profile} was not set up by DSH: ${workspaceFile} lacks ${missing.join(', ')} (without them pnpm installs an isolated layout the host cannot load, and a second cordis)`,
      `rerun with --repair to add them, or move ${profileDir} away and rerun so DSH creates the profile afresh`,
    )
  }

  // 2. Where our packages come from; tarballs are kept in the profile, since pnpm reads the overrides on every later install.
  const { source, tarballs } = await locateTarballs(options, profileDir, step)

  // 3. Pin them (every package of ours, so dependencies between them resolve to the same build).
  const overrides = Object.fromEntries(Object.entries(tarballs).map(([name, file]) => [name, `file:${file}`]))
  writeFileSync(workspaceFile, mergeWorkspaceYaml(before, { overrides, repair: options.repair }, workspaceFile))

  // 4. dsh plugin add.
  const specs = options.packages.map((name) => tarballs[name] ?? name)
  step(`dsh plugin --profile ${profile} add ${options.packages.join(' ')} (pnpm; a first install compiles better-sqlite3, about a minute)`)
  const added = await dsh(session, ['plugin', '--profile', profile, 'add', ...specs])
  if (added.code !== 0) {
    throw new InstallError(
      'add-failed',
      `dsh plugin add failed (exit ${added.code}):\n${tail(added)}`,
      source === 'registry' ? 'check that the packages exist on your registry, or install from a checkout (`npx dsh-memory install` there) or with --from <folder of tarballs>' : 'read the pnpm output above; rerun after fixing it',
    )
  }
  checkSingleCordis(profileDir)
  removeOtherBuilds(profileDir, Object.values(tarballs))

  // 5. Verify: the composed tree lists our rows, and a boot loads them.
  const rows = options.packages.flatMap((name) => installedRows(profileDir, name))
  step(`checking dsh --profile ${profile} --dump-config`)
  const dump = await dsh(session, ['--profile', profile, '--dump-config'], 120_000)
  const absent = dump.code === 0 ? missingRows(rows, dump.stdout) : rows
  if (absent.length > 0) {
    throw new InstallError('verify-failed', `dsh --profile ${profile} --dump-config does not list ${absent.map((row) => row.id).join(', ')} (exit ${dump.code}):\n${tail(dump)}`, `check ${join(profileDir, 'package.json')} lists the packages under dsh.profile.bundles and that ${join(profileDir, 'cordis.patch.yml')} does not remove them`)
  }
  let database: string | null = null
  if (!options.skipBoot) {
    database = join(dataDirOf(dump.stdout, session.dshHome), 'memory.db')
    step(`booting profile ${profile} once to load the plugins`)
    const boot = await dsh(session, ['--profile', profile, '--help'], 180_000)
    if (boot.code !== 0 || !existsSync(database)) {
      throw new InstallError('verify-failed', `a boot of profile ${profile} did not load the plugins (exit ${boot.code}${existsSync(database) ? '' : `, no ${database}`}):\n${tail(boot)}`, `run \`dsh --profile ${profile} --help\` to see the error; \`dsh-memory uninstall --profile ${profile}\` undoes the install`)
    }
  }
  return { profile, profileDir, dshHome: session.dshHome, launcher: session.launcher.path, ...session.tools, createdProfile, source, packages: options.packages, overrides, rows, database }
}

async function locateTarballs(options: InstallOptions, profileDir: string, step: (line: string) => void): Promise<{ source: InstallReport['source']; tarballs: Record<string, string> }> {
  // One subfolder per build (a hash of the tarballs): pnpm keys a `file:` pin by its path and
  // reuses what it installed before, so a rebuilt package with an unchanged version would
  // otherwise never reach the profile.
  const copyIn = (found: Readonly<Record<string, string>>) => {
    const hash = createHash('sha256')
    for (const name of Object.keys(found).sort()) hash.update(name).update(readFileSync(found[name]!))
    const keep = join(profileDir, TARBALL_FOLDER, hash.digest('hex').slice(0, 12))
    mkdirSync(keep, { recursive: true })
    return Object.fromEntries(
      Object.entries(found).map(([name, file]) => {
        const target = join(keep, basename(file))
        if (resolve(file) !== target) cpSync(file, target)
        return [name, target]
      }),
    )
  }
  if (options.tarballs) return { source: 'given', tarballs: copyIn(options.tarballs) }
  if (options.from) return { source: 'folder', tarballs: copyIn(tarballsIn(options.from)) }
  const root = checkoutRoot()
  if (!root) return { source: 'registry', tarballs: {} }
  step(`packing the packages of ${root}`)
  const scratch = mkdtempSync(join(tmpdir(), 'dshm-pack-'))
  try {
    return { source: 'checkout', tarballs: copyIn(await packWorkspaces(root, publishablePackages(root), scratch)) }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** Drop the tarball folders of earlier installs, now that pnpm no longer points at them. */
function removeOtherBuilds(profileDir: string, current: readonly string[]): void {
  const root = join(profileDir, TARBALL_FOLDER)
  if (!existsSync(root)) return
  const keep = new Set(current.map((file) => basename(dirname(file))))
  for (const entry of readdirSync(root)) if (!keep.has(entry)) rmSync(join(root, entry), { recursive: true, force: true })
}

/** Rows a package installed in the profile adds, from its own bundle patch. */
function installedRows(profileDir: string, name: string): LoaderRow[] {
  const dir = join(profileDir, 'node_modules', ...name.split('/'))
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dsh?: { bundle?: { patch?: string } } }
  const patch = manifest.dsh?.bundle?.patch
  return patch ? bundleRows(readFileSync(join(dir, patch), 'utf8')) : []
}

/**
 * A copy of `@deepseek-ai/cordis` inside the profile means pnpm installed its own: our plugins
 * would then talk to a different Cordis than the host's and fail in confusing ways.
 * @throws InstallError `second-cordis`
 */
export function checkSingleCordis(profileDir: string): void {
  const found: string[] = []
  const walk = (dir: string, depth: number) => {
    if (depth > 6 || found.length > 3) return
    let entries: string[]
    try {
      entries = readdirSync(dir)
    } catch {
      return
    }
    for (const entry of entries) {
      const path = join(dir, entry)
      if (/^@deepseek-ai\+cordis@/.test(entry) || (entry === 'cordis' && basename(dir) === '@deepseek-ai')) found.push(path)
      else if (entry === 'node_modules' || entry === '.pnpm' || entry.startsWith('@') || dir.endsWith('node_modules') || dir.endsWith('.pnpm')) {
        if (statSafe(path)) walk(path, depth + 1)
      }
    }
  }
  walk(join(profileDir, 'node_modules'), 0)
  if (found.length > 0) {
    throw new InstallError('second-cordis', `pnpm installed its own @deepseek-ai/cordis into profile ${basename(profileDir)} (${found[0]}); the plugins would not share the host's Cordis`, `make sure ${join(profileDir, WORKSPACE_FILE)} has \`nodeLinker: hoisted\` and \`autoInstallPeers: false\`, delete ${join(profileDir, 'node_modules')} and rerun`)
  }
}

function statSafe(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The store rows' `dataDir` in a dumped tree (the first non-empty one), else `<home>/memory`. */
export function dataDirOf(dump: string, dshHome: string): string {
  let configured = ''
  const visit = (value: unknown) => {
    if (configured || !Array.isArray(value)) return
    for (const row of value as { name?: unknown; config?: unknown; group?: unknown }[]) {
      if (!row || typeof row !== 'object') continue
      const config = row.config as { dataDir?: unknown } | undefined
      if (row.name === `${SCOPE}/store/plugin` && typeof config?.dataDir === 'string' && config.dataDir) configured = config.dataDir
      if (Array.isArray(row.config)) visit(row.config)
    }
  }
  try {
    visit(parse(dump, { logLevel: 'error' }))
  } catch {
    // an unparsable dump leaves the default
  }
  return configured ? resolve(configured.replace(/^~(?=$|\/)/, homedir())) : join(dshHome, 'memory')
}

/** Remove our packages and overrides from a profile; the data dir stays. */
export async function uninstallPlugins(target: ProfileTarget): Promise<UninstallReport> {
  const session = await open(target)
  const { profileDir, step } = session
  const manifestFile = join(profileDir, 'package.json')
  if (!existsSync(manifestFile)) {
    throw new InstallError('profile-missing', `there is no profile ${target.profile} at ${profileDir}`, 'pass the --profile (and --dsh-home) you installed into')
  }
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { dependencies?: Record<string, string> }
  const ours = Object.keys(manifest.dependencies ?? {}).filter((name) => name.startsWith(`${SCOPE}/`) || name === 'dsh-memory')
  const dump = await dsh(session, ['--profile', target.profile, '--dump-config'], 120_000)
  const dataDirKept = dataDirOf(dump.stdout, session.dshHome)
  if (ours.length > 0) {
    step(`dsh plugin --profile ${target.profile} remove ${ours.join(' ')}`)
    const removed = await dsh(session, ['plugin', '--profile', target.profile, 'remove', ...ours])
    if (removed.code !== 0) throw new InstallError('remove-failed', `dsh plugin remove failed (exit ${removed.code}):\n${tail(removed)}`, 'read the pnpm output above; rerun after fixing it')
  }
  const workspaceFile = join(profileDir, WORKSPACE_FILE)
  let overridesRemoved: string[] = []
  if (existsSync(workspaceFile)) {
    const text = readFileSync(workspaceFile, 'utf8')
    overridesRemoved = Object.keys(readOverrides(text, workspaceFile)).filter((name) => name.startsWith(`${SCOPE}/`) || name === 'dsh-memory')
    if (overridesRemoved.length > 0) writeFileSync(workspaceFile, removeOverrides(text, overridesRemoved, workspaceFile))
  }
  rmSync(join(profileDir, TARBALL_FOLDER), { recursive: true, force: true })
  return { profile: target.profile, profileDir, removed: ours, overridesRemoved, dataDirKept }
}
