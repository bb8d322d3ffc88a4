import { existsSync } from 'node:fs'
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { installPlugins, packWorkspaces as packCheckout, runProgram } from 'dsh-memory'

/** apps/playground (works from src/ under vitest and from dist/ when built). */
export const PLAYGROUND_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..')
/** The monorepo root. */
export const REPO_ROOT = resolve(PLAYGROUND_DIR, '../..')
/** The pinned DSH install (apps/playground/host, outside the root workspaces). */
export const HOST_DIR = join(PLAYGROUND_DIR, 'host')

/** Error raised by the harness with a stable code. */
export class HostError extends Error {
  constructor(
    readonly code: 'host-missing' | 'timeout',
    message: string,
  ) {
    super(message)
    this.name = 'HostError'
  }
}

/**
 * True when a launch failed only because another launch of the same profile was rewriting the
 * profile's root `cordis.yml` at that instant. The host rewrites that file on every boot with a
 * plain truncate-and-write (`prepareProfile` in `@deepseek-ai/dsh`), so two processes that start
 * together can read it empty ("config file must be a top-level array") and exit before any plugin
 * loads. Such a launch did nothing, so starting it again is safe; any other failure is reported.
 */
export function isProfileRootRace(code: number | null, stderr: string): boolean {
  return code !== 0 && /config file must be a top-level array/.test(stderr) && /profiles\/[^/\s]+\/cordis\.yml/.test(stderr)
}

/** How many times a launch that hit {@link isProfileRootRace} is started again. */
export const PROFILE_RACE_RETRIES = 3

/** Absolute path of the `dsh` launcher script of the pinned host. */
export function dshEntry(): string {
  const entry = join(HOST_DIR, 'node_modules/@deepseek-ai/dsh/lib/bin.js')
  if (!existsSync(entry)) {
    throw new HostError('host-missing', `the pinned DSH host is not installed at ${HOST_DIR}; run \`npm run setup\` first`)
  }
  return entry
}

/** PATH with the host's bin folder (pnpm for `dsh plugin`) and this Node first. */
export function hostPath(): string {
  return [join(HOST_DIR, 'node_modules/.bin'), dirname(process.execPath), process.env.PATH ?? ''].join(':')
}

/**
 * `npm pack` workspace packages into `outDir`, as a user would get them from the registry
 * (the same packing `dsh-memory install` does in a checkout).
 * @returns package name → absolute tarball path.
 */
export function packWorkspaces(names: readonly string[], outDir: string): Promise<Record<string, string>> {
  return packCheckout(REPO_ROOT, names, outDir)
}

/** One run of the `dsh` launcher. */
export interface DshRunResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link DshHome.run}. */
export interface DshRunOptions {
  readonly profile: string
  /** The workspace (the session's cwd). Created if missing. */
  readonly cwd: string
  /** Launcher arguments after `--profile X` (e.g. the task, or `--dump-config`). */
  readonly args: readonly string[]
  /** Model server base URL for `DEEPSEEK_BASE_URL`. */
  readonly modelUrl?: string
  /** YAML text of an extra `--patch` overlay layer. */
  readonly patch?: string
  readonly env?: Record<string, string>
  readonly timeoutMs?: number
}

/** The overlay every test run uses: no title request, no retry storms on a scripted failure. */
export const TEST_OVERLAY = `- id: session-title-llm
  disabled: true
- id: llm-deepseek
  config:
    retryPolicy:
      mode: normal
      maxRetries: 0
`

/**
 * A DSH home directory bound to the pinned host install: profiles, plugin installs and runs.
 * Use one per test file; it never touches the user's `~/.dsh`.
 */
export class DshHome {
  private patchCount = 0

  constructor(readonly dir: string) {}

  /** Environment for a launcher process in this home. */
  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
      ...process.env,
      DSH_HOME: this.dir,
      PATH: hostPath(),
      DEEPSEEK_API_KEY: 'sk-scripted-test-key-000000',
      NO_COLOR: '1',
      ...extra,
    }
  }

  /**
   * Create a headless profile and install packed packages into it the way a user does, through
   * the code of `dsh-memory install` (pin the tarballs in the profile's pnpm settings, then
   * `dsh plugin --profile <name> add <tarball…>`, then check `--dump-config` lists the rows).
   * Only the manifest is hand-made: DSH creates `web` and `headless` profiles from templates,
   * and tests need many headless profiles with other names.
   */
  async createProfile(name: string, tarballs: Record<string, string>, install: readonly string[]): Promise<string> {
    const profileDir = join(this.dir, 'profiles', name)
    await rm(profileDir, { recursive: true, force: true })
    await mkdir(profileDir, { recursive: true })
    await writeFile(
      join(profileDir, 'package.json'),
      JSON.stringify(
        {
          name: `dsh-profile-${name}`,
          private: true,
          dependencies: {},
          dsh: { profile: { bundles: ['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-headless'] } },
        },
        null,
        2,
      ),
    )
    await writeFile(join(profileDir, 'cordis.patch.yml'), '[]\n')
    // `repair` writes the pnpm settings DSH's own scaffold would have written for this manifest.
    await installPlugins({ dshHome: this.dir, profile: name, dsh: dshEntry(), env: this.env(), cwd: profileDir, packages: install, tarballs, repair: true, skipBoot: true })
    return profileDir
  }

  /** Run the launcher once: `dsh --profile X [--patch overlay] args…`. */
  async run(options: DshRunOptions): Promise<DshRunResult> {
    await mkdir(options.cwd, { recursive: true })
    const args = ['--profile', options.profile]
    const overlay = join(this.dir, `overlay-${++this.patchCount}.yml`)
    await writeFile(overlay, TEST_OVERLAY + (options.patch ?? ''))
    args.push('--patch', overlay)
    args.push(...options.args)
    return this.spawn(args, {
      cwd: options.cwd,
      timeoutMs: options.timeoutMs ?? 60_000,
      env: { ...(options.modelUrl ? { DEEPSEEK_BASE_URL: options.modelUrl } : {}), ...options.env },
    })
  }

  /** Sessions stored by the host for one workspace (directory names). */
  async sessionDirs(): Promise<string[]> {
    const root = join(this.dir, 'sessions')
    if (!existsSync(root)) return []
    const out: string[] = []
    for (const workspace of await readdir(root)) {
      for (const session of await readdir(join(root, workspace))) out.push(join(root, workspace, session))
    }
    return out
  }

  private async spawn(args: readonly string[], options: { cwd: string; timeoutMs: number; env?: Record<string, string> }): Promise<DshRunResult> {
    let result = await runProgram(process.execPath, [dshEntry(), ...args], { cwd: options.cwd, env: this.env(options.env), timeoutMs: options.timeoutMs })
    for (let retry = 0; retry < PROFILE_RACE_RETRIES && isProfileRootRace(result.code, result.stderr); retry++) {
      result = await runProgram(process.execPath, [dshEntry(), ...args], { cwd: options.cwd, env: this.env(options.env), timeoutMs: options.timeoutMs })
    }
    if (result.timedOut) throw new HostError('timeout', `dsh ${args.join(' ')} did not finish in ${options.timeoutMs} ms\n${result.stdout}\n${result.stderr}`)
    return { code: result.code, stdout: result.stdout, stderr: result.stderr }
  }
}
