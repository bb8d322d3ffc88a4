/**
 * The `dsh` launcher and the tools it needs, found and checked before anything is changed, so
 * a missing piece is reported as the next step to take rather than as a stack trace half way
 * through an install.
 */
import { spawn } from 'node:child_process'
import { accessSync, constants, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, isAbsolute, join, resolve } from 'node:path'
import { InstallError } from './errors.ts'

/** Oldest Node DSH runs on (it uses `node:sqlite` and zstd). */
export const MIN_NODE: readonly [number, number] = [22, 16]

/** How to start `dsh`: an executable, or a JS file run by `node` from the same PATH. */
export interface Launcher {
  /** What the user named or what PATH gave (for messages). */
  readonly path: string
  readonly command: string
  readonly prefix: readonly string[]
}

/** One finished process. */
export interface RunResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** Killed after `timeoutMs`. */
  readonly timedOut: boolean
}

/** Find an executable on `PATH` (no shell, no `which`). */
export function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const folder of (env.PATH ?? '').split(delimiter)) {
    if (!folder) continue
    const candidate = join(folder, name)
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/**
 * The launcher: `--dsh <path>` when given, else `dsh` on PATH.
 * @throws InstallError `no-launcher`
 */
export function findLauncher(option: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): Launcher {
  const named = option === undefined ? onPath('dsh', env) : isAbsolute(option) ? option : resolve(cwd, option)
  if (named === undefined) {
    throw new InstallError('no-launcher', 'no `dsh` launcher on PATH', 'install DeepSeek Harness (`npm install -g @deepseek-ai/dsh`), or pass --dsh <path to the dsh launcher>')
  }
  let real: string
  try {
    real = realpathSync(named)
  } catch {
    throw new InstallError('no-launcher', `the dsh launcher ${named} does not exist`, 'pass --dsh <path> of an installed launcher (…/@deepseek-ai/dsh/lib/bin.js or the `dsh` on your PATH)')
  }
  // npm's global bin is a symlink to lib/bin.js; run JS files with the PATH's node so a
  // non-executable bin.js (e.g. inside a plain install) works too.
  return /\.[cm]?js$/.test(real) ? { path: named, command: 'node', prefix: [real] } : { path: named, command: real, prefix: [] }
}

/** Run a program to the end, collecting its output; `stdin` is closed. Used by the e2e harness too. */
export function runProgram(command: string, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let timedOut = false
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const timer = options.timeoutMs
      ? setTimeout(() => {
          timedOut = true
          child.kill('SIGKILL')
          stderr += `\n(killed after ${options.timeoutMs} ms)`
        }, options.timeoutMs)
      : undefined
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolvePromise({ code, stdout, stderr, timedOut })
    })
  })
}

/** Run the launcher with `args`. */
export function runLauncher(launcher: Launcher, args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult> {
  return runProgram(launcher.command, [...launcher.prefix, ...args], options)
}

/** `major.minor.patch` → whether it is at least {@link MIN_NODE}. */
export function nodeVersionOk(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number)
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
}

/**
 * Check the Node that will run `dsh` and that pnpm is on PATH (`dsh plugin add` calls it).
 * @throws InstallError `node-too-old`, `pnpm-missing`
 */
export async function checkTools(launcher: Launcher, env: NodeJS.ProcessEnv, cwd: string): Promise<{ node: string; pnpm: string }> {
  const nodeCommand = launcher.command === 'node' ? 'node' : (onPath('node', env) ?? 'node')
  let node: string
  try {
    node = (await runProgram(nodeCommand, ['-p', 'process.versions.node'], { cwd, env })).stdout.trim()
  } catch {
    throw new InstallError('node-too-old', 'no `node` on PATH to run dsh', `install Node ${MIN_NODE.join('.')} or newer and put it first on PATH`)
  }
  if (!nodeVersionOk(node)) {
    throw new InstallError('node-too-old', `dsh needs Node ${MIN_NODE.join('.')} or newer; the node on PATH is ${node || 'unknown'}`, `install Node 22 (e.g. \`npm install -g node@22\`, nvm, or your package manager) and put it first on PATH`)
  }
  const pnpmPath = onPath('pnpm', env)
  if (!pnpmPath) {
    throw new InstallError('pnpm-missing', '`dsh plugin add` needs pnpm on PATH and there is none', 'install it (`npm install -g pnpm@10`, or `corepack enable pnpm`) and rerun')
  }
  // Asked from a neutral folder: inside a project whose package.json names another package
  // manager (`packageManager`), pnpm refuses to run at all.
  const version = await runProgram(pnpmPath, ['--version'], { cwd: tmpdir(), env }).catch((error: Error) => ({ code: 1, stdout: '', stderr: error.message }))
  const pnpm = version.stdout.trim()
  if (version.code !== 0 || !pnpm) {
    throw new InstallError('pnpm-missing', `pnpm at ${pnpmPath} does not run: ${version.stderr.trim().split('\n')[0] ?? ''}`, 'reinstall pnpm (`npm install -g pnpm@10`) and rerun')
  }
  return { node, pnpm }
}
