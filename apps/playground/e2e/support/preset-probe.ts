import { existsSync, readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A tiny host plugin that reports, to a JSONL file, what the tests cannot see from outside the
 * host process: every `memory-capture/captured` event (and its deprecated alias
 * `memory/captured`), which rows of each dsh-memory plugin are active (`pluginRows` of
 * `@dsh-memory/store/plugin`, the registry every adapter claims its row in), and whether each
 * deprecated service key holds the same instance as its new key. It is written into the profile folder so that its bare import resolves to the profile's
 * own installed `@dsh-memory/store`, the same module the plugins use.
 */
const SOURCE = `import { appendFileSync } from 'node:fs'
import { pluginRows } from '@dsh-memory/store/plugin'

export const name = 'e2e-preset-probe'
export const inject = ['memoryStore']

export function apply(ctx, config) {
  const write = (record) => appendFileSync(config.out, JSON.stringify(record) + '\\n')
  ctx.on('memory-capture/captured', (message) => write({ type: 'captured', messageId: message.messageId, role: message.role }))
  ctx.on('memory/captured', (message) => write({ type: 'captured-deprecated', messageId: message.messageId, role: message.role }))
  // Cordis hands out a proxy of a Service class per lookup; compare what the proxies wrap.
  const original = (value) => value?.[Symbol.for('cordis.original')] ?? value
  const same = (name, deprecated) => ctx.get(name) !== undefined && original(ctx.get(name)) === original(ctx.get(deprecated))
  ctx.on('session/flush', () => {
    const aliases = { cueBank: same('memoryCueBank', 'cueBank'), distill: same('memoryDistill', 'distill') }
    write({ type: 'rows', dataDir: ctx.memoryStore.dataDir, rows: pluginRows(ctx), aliases })
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
  /** Message ids of every `memory-capture/captured` event, in order. */
  readonly captured: { messageId: string; role: string }[]
  /** The same for its deprecated alias `memory/captured`. */
  readonly capturedDeprecated: { messageId: string; role: string }[]
  /** Per deprecated service key: it is provided and holds the new key's instance. */
  readonly aliases: Record<string, boolean> | undefined
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
        .map((line) => JSON.parse(line) as { type: string; messageId?: string; role?: string; rows?: ProbeReport['rows']; dataDir?: string; aliases?: ProbeReport['aliases'] })
    : []
  const last = records.filter((record) => record.type === 'rows').pop()
  const messages = (type: string) => records.filter((record) => record.type === type).map((record) => ({ messageId: record.messageId!, role: record.role! }))
  return {
    captured: messages('captured'),
    capturedDeprecated: messages('captured-deprecated'),
    rows: last?.rows ?? [],
    dataDir: last?.dataDir,
    aliases: last?.aliases,
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
