/**
 * The real DSH web surface for end-to-end tests: a profile switched from the headless
 * surface to `dsh-web-app`, launched as `dsh --profile <name> --port 0 --no-open`, with its
 * `dsh web: http://…` origin read from the output.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { dshEntry, type DshHome } from '../../src/host.js'

/** A running web surface. */
export interface WebSurface {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string
  /** Everything the launcher printed so far. */
  output(): string
  /** SIGTERM, then SIGKILL after 10 s. */
  stop(): Promise<void>
}

/** Make a profile made by `createProfile` a web one: `dsh-web-app` instead of `dsh-headless`, other bundles kept. */
export async function useWebBundles(profileDir: string): Promise<void> {
  const file = join(profileDir, 'package.json')
  const manifest = JSON.parse(await readFile(file, 'utf8')) as { dsh: { profile: { bundles: string[] } } }
  manifest.dsh.profile.bundles = manifest.dsh.profile.bundles.map((bundle) => (bundle === '@deepseek-ai/dsh-headless' ? '@deepseek-ai/dsh-web-app' : bundle))
  await writeFile(file, JSON.stringify(manifest, null, 2))
}

/** Launch the web surface of `profile` and wait (up to 120 s) for its URL line. */
export async function startWebSurface(home: DshHome, options: { profile: string; cwd: string; env?: Record<string, string> }): Promise<WebSurface> {
  let output = ''
  const child: ChildProcess = spawn(process.execPath, [dshEntry(), '--profile', options.profile, '--port', '0', '--no-open'], {
    cwd: options.cwd,
    env: home.env(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))])
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the web surface printed no URL in 120 s:\n${output}`)), 120_000)
    const check = () => {
      const match = /dsh web:\s*(http:\/\/[^\s/]+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', check)
    child.stderr!.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`dsh exited with ${code}:\n${output}`))
    })
  }).catch(async (error: unknown) => {
    await stop()
    throw error
  })
  return { origin, output: () => output, stop }
}
