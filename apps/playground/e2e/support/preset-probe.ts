import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A tiny host plugin that reports, to a JSONL file, what the tests cannot see from outside the
 * host process: every `memory/captured` event, and which rows of each dsh-memory plugin are
 * active (`pluginRows` of `@dsh-memory/store/plugin`, the registry every adapter claims its row
 * in). It is written into the profile folder so that its bare import resolves to the profile's
 * own installed `@dsh-memory/store`, the same module the plugins use.
 */
const SOURCE = `import { appendFileSync } from 'node:fs'
import { pluginRows } from '@dsh-memory/store/plugin'

export const name = 'e2e-preset-probe'
export const inject = ['memoryStore']

export function apply(ctx, config) {
  const write = (record) => appendFileSync(config.out, JSON.stringify(record) + '\\n')
  ctx.on('memory/captured', (message) => write({ type: 'captured', messageId: message.messageId, role: message.role }))
  ctx.on('session/flush', () => {
    write({ type: 'rows', dataDir: ctx.memoryStore.dataDir, rows: pluginRows(ctx) })
  })
}
`

/** Write the probe into the profile folder; returns its absolute path. */
export async function writeProbePlugin(profileDir: string): Promise<string> {
  const path = join(profileDir, 'e2e-preset-probe.mjs')
  await writeFile(path, SOURCE)
  return path
}

/** The `--patch` overlay that mounts the probe, reporting to `out`. */
export function probeOverlay(pluginPath: string, out: string): string {
  return ['- insert:', '    - id: e2e-preset-probe', `      name: '${pluginPath}'`, '      config:', `        out: '${out}'`, ''].join('\n')
}

/** What the probe saw. */
export interface ProbeReport {
  /** Message ids of every `memory/captured` event, in order. */
  readonly captured: { messageId: string; role: string }[]
  /** The last row report: plugin → rows (label, active). */
  readonly rows: { plugin: string; rows: { label: string; active: boolean }[] }[]
  readonly dataDir: string | undefined
}

/** Read the probe's file (empty report when it wrote nothing). */
export function readProbe(out: string): ProbeReport {
  const records = existsSync(out)
    ? readFileSync(out, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { type: string; messageId?: string; role?: string; rows?: ProbeReport['rows']; dataDir?: string })
    : []
  const last = records.filter((record) => record.type === 'rows').pop()
  return {
    captured: records.filter((record) => record.type === 'captured').map((record) => ({ messageId: record.messageId!, role: record.role! })),
    rows: last?.rows ?? [],
    dataDir: last?.dataDir,
  }
}

/** The active row of each plugin, e.g. `{ 'memory-store': 'memory-store', 'memory-capture': 'memory-capture' }`. */
export function activeRows(report: ProbeReport): Record<string, string[]> {
  return Object.fromEntries(report.rows.map((entry) => [entry.plugin, entry.rows.filter((row) => row.active).map((row) => row.label)]))
}

/** Every row of each plugin, e.g. `{ 'memory-store': ['memory-store', 'memory-capture-store'] }`. */
export function allRows(report: ProbeReport): Record<string, string[]> {
  return Object.fromEntries(report.rows.map((entry) => [entry.plugin, entry.rows.map((row) => row.label).sort()]))
}
