import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { dshEntry, type DshHome, isProfileRootRace, PROFILE_RACE_RETRIES, TEST_OVERLAY } from '../../src/host.js'

/**
 * A session that outlives one host process, driven the way a person drives an interactive
 * host: create (or resume by id) a persisted session, send prompts, run `/memory …` commands
 * through the host's real command registry, and either exit normally or hang until the test
 * kills the process. Headless DSH has one prompt per run and no resume flag; this small host
 * plugin replaces the headless runner (its row is disabled by the overlay) and uses only the
 * host's public services: `ctx.agents.create/resume`, `agent.followup`, `ctx.commands.execute`,
 * `ctx.sessions.flush` and the launcher's `ctx.appExit`.
 *
 * The plugin is a plain `.mjs` file the host loads by absolute path.
 */
const SOURCE = `import { randomUUID } from 'node:crypto'
import { writeFile } from 'node:fs/promises'

export const name = 'e2e-layers-driver'
export const inject = ['agents', 'sessions', 'commands', 'agentDefaultModel']

const message = (text) => Object.freeze({
  id: randomUUID(),
  role: 'user',
  content: Object.freeze([Object.freeze({ type: 'text', text })]),
  source: Object.freeze({ kind: 'user' }),
})

export function apply(ctx, config) {
  const exit = ctx.get('appExit')
  const report = { commands: [] }
  const save = () => writeFile(config.reportFile, JSON.stringify(report))
  const run = async () => {
    await ctx.get('loader')?.await()
    const selection = ctx.agentDefaultModel.currentSelection()
    const agentOptions = { provider: selection.provider, model: selection.model }
    const handle = config.resume
      ? await ctx.agents.resume({ resumeSessionId: config.sessionId, agentOptions })
      : await ctx.agents.create({ sessionId: config.sessionId, meta: { cwd: process.cwd() }, agentOptions })
    const agent = handle.agent
    await agent.whenIdle()
    for (const step of config.steps) {
      if (step.say) {
        agent.followup(message(step.say))
        await new Promise((resolve) => setTimeout(resolve, 5))
        await agent.whenIdle()
      }
      if (step.command) {
        const execution = await ctx.commands.execute(agent, step.command, [], new AbortController().signal)
        report.commands.push({ command: step.command, result: execution?.result ?? null })
      }
      if (step.flush) await ctx.sessions.flush(agent.session)
      // Distill everything captured so far (the distill service, when installed).
      if (step.distill) await ctx.get('memoryDistill')?.runPending?.()
      if (step.mark) {
        await save()
        await writeFile(step.mark, 'reached')
      }
      // Stay alive until the test kills this process (a crash, not an orderly exit).
      if (step.hang) await new Promise(() => {})
    }
    await ctx.sessions.flush(agent.session)
    await save()
    exit(0)
  }
  run().catch(async (error) => {
    report.error = String(error?.stack ?? error)
    await save().catch(() => {})
    exit(1)
  })
}
`

/** One step of a driven session. */
export type DriverStep = { say: string } | { command: string } | { flush: true } | { distill: true } | { mark: string } | { hang: true }

/** What the driver reports back (the command results, or the error that stopped it). */
export interface DriverReport {
  readonly commands: { command: string; result: { kind: string; text?: string } | null }[]
  readonly error?: string
}

/** Write the driver plugin into `dir`; returns its absolute path. */
export async function writeLayersDriver(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true })
  const path = join(dir, 'layers-driver.mjs')
  await writeFile(path, SOURCE)
  return path
}

/** The `--patch` overlay that swaps the headless runner for the driver. */
export function driverOverlay(pluginPath: string, config: { sessionId: string; resume: boolean; reportFile: string; steps: readonly DriverStep[] }): string {
  return [
    '- id: headless-runner',
    '  disabled: true',
    '- insert:',
    '    - id: e2e-layers-driver',
    `      name: '${pluginPath}'`,
    `      config: ${JSON.stringify(config)}`,
    '',
  ].join('\n')
}

/** A launcher process the test may kill. */
export interface RunningHost {
  /** The current process (a new one when a launch hit the host's profile-root race). */
  readonly child: ChildProcess
  /** Settles when the process exits (however it exits). */
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
}

type HostExit = Awaited<RunningHost['done']>

/**
 * Start `dsh --profile <profile> --patch <overlay> driver` in `cwd` without waiting for it,
 * so the test can kill it mid-session. (DshHome.run waits for the exit.) A launch that exited at
 * boot on the host's profile-root race ({@link isProfileRootRace}) is started again.
 */
export async function startHost(home: DshHome, options: { profile: string; cwd: string; modelUrl: string; patch: string; name: string }): Promise<RunningHost> {
  await mkdir(options.cwd, { recursive: true })
  const overlay = join(home.dir, `overlay-${options.name}.yml`)
  await writeFile(overlay, TEST_OVERLAY + options.patch)
  const launch = (): { child: ChildProcess; exit: Promise<HostExit> } => {
    const child = spawn(process.execPath, [dshEntry(), '--profile', options.profile, '--patch', overlay, 'driver'], {
      cwd: options.cwd,
      env: home.env({ DEEPSEEK_BASE_URL: options.modelUrl }),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    const exit = new Promise<HostExit>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })))
    return { child, exit }
  }
  let current = launch()
  const done = (async () => {
    let result = await current.exit
    for (let retry = 0; retry < PROFILE_RACE_RETRIES && isProfileRootRace(result.code, result.stderr); retry++) {
      current = launch()
      result = await current.exit
    }
    return result
  })()
  return {
    get child() {
      return current.child
    },
    done,
  }
}

/** Wait until `path` exists (or the process ends, or `timeoutMs` passes). */
export async function waitForFile(path: string, running: RunningHost, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let ended = false
  void running.done.then(() => (ended = true))
  while (!existsSync(path)) {
    if (ended) throw new Error(`the host exited before ${path} appeared:\n${(await running.done).stderr}`)
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The driver's report. */
export async function readReport(path: string): Promise<DriverReport> {
  return JSON.parse(await readFile(path, 'utf8')) as DriverReport
}
