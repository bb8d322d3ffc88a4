/**
 * A Markdown projection of each memory layer on disk: one file for the global layer and one
 * per workspace, for reading, grepping and diffing memory with ordinary tools.
 *
 * It is derived data. SQLite stays the only source of truth: each file's first line records
 * the layer revision it shows, a file whose revision differs from the store's is rebuilt,
 * a missing file is rebuilt, and deleting the whole directory loses nothing. Files are
 * written atomically (temp file + rename) and hold no timestamps, so the same revision
 * always gives the same bytes. Edits to a file are overwritten at the next change.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, openSync, readSync, closeSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { type CoordinatedMemoryStore, type LayerRevision, type Memory, parseLayerKey, type Persona, type Scene } from '@dsh-memory/store'
import { needsReview } from './feedback.ts'
import { indexOrder, layerFilter } from './layers.ts'

/** Version of the projection format (first-line header). */
export const PROJECTION_VERSION = 1
const HEADER_PREFIX = '<!-- dsh-memory layer projection '
const MAX_SCAN = 10_000

/**
 * The file of a layer under `dir`: `global.md` (the host's user's global layer, whose key is
 * per user), or `workspaces/<name>-<hash>.md`.
 */
export function projectionPath(dir: string, layerKey: string): string {
  if (parseLayerKey(layerKey)?.scope === 'global') return join(dir, 'global.md')
  const workspace = layerKey.slice('workspace:'.length)
  const slug =
    basename(workspace)
      .normalize('NFKC')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'workspace'
  return join(dir, 'workspaces', `${slug}-${createHash('sha256').update(workspace).digest('hex').slice(0, 10)}.md`)
}

function day(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10)
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line.length > 0 ? `  ${line}` : ''))
    .join('\n')
}

/** The projection text of one layer. */
export function renderProjection(layer: Pick<LayerRevision, 'key' | 'scope' | 'workspace' | 'revision'>, memories: readonly Memory[], persona: Persona | undefined, scenes: readonly Scene[]): string {
  const header = `${HEADER_PREFIX}${JSON.stringify({ version: PROJECTION_VERSION, layer: layer.key, revision: layer.revision })} -->`
  const title = layer.scope === 'global' ? '# Memory layer: global' : `# Memory layer: workspace \`${layer.workspace}\``
  const lines = [
    header,
    title,
    '',
    `Derived from memory.db at layer revision ${layer.revision} (${memories.length} ${memories.length === 1 ? 'memory' : 'memories'}). ` +
      'Do not edit: the file is rebuilt whenever the layer changes, and deleting it loses nothing.',
  ]
  if (persona && persona.text.trim()) lines.push('', `## Persona (version ${persona.version})`, '', persona.text.trim())
  if (scenes.length > 0) {
    lines.push('', `## Scenes (${scenes.length})`, '')
    for (const scene of [...scenes].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))) {
      lines.push(`- \`${scene.id}\` **${scene.title.replace(/\s+/g, ' ')}** (${scene.memoryIds.length} memories)`, indent(scene.summary.trim()))
    }
  }
  const kinds = [...new Set(memories.map((memory) => memory.kind))].sort()
  for (const kind of kinds) {
    const ofKind = indexOrder(memories.filter((memory) => memory.kind === kind))
    lines.push('', `## ${kind} (${ofKind.length})`, '')
    for (const memory of ofKind) {
      const review = needsReview(memory.flags) ? ' · **flagged for review**' : ''
      lines.push(`- \`${memory.id}\` · updated ${day(memory.updatedAt)} · priority ${memory.priority}${review}`, indent(memory.text.trim()))
    }
  }
  return lines.join('\n') + '\n'
}

/** The revision recorded in a projection file's first line, or `undefined` (missing, foreign or damaged file). */
export function projectedRevision(path: string): number | undefined {
  if (!existsSync(path)) return undefined
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    const buffer = Buffer.alloc(4096)
    const read = readSync(fd, buffer, 0, buffer.length, 0)
    const first = buffer.subarray(0, read).toString('utf8').split('\n', 1)[0] ?? ''
    if (!first.startsWith(HEADER_PREFIX) || !first.endsWith(' -->')) return undefined
    const header = JSON.parse(first.slice(HEADER_PREFIX.length, -' -->'.length)) as { version?: unknown; revision?: unknown }
    return header.version === PROJECTION_VERSION && typeof header.revision === 'number' ? header.revision : undefined
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Keeps the projection of every layer in `dir` current. */
export class LayerProjection {
  readonly dir: string
  readonly #store: () => CoordinatedMemoryStore
  /** Revision last written or verified per layer, so a refresh reads files only when something changed. */
  readonly #known = new Map<string, number>()

  constructor(store: () => CoordinatedMemoryStore, dir: string) {
    this.#store = store
    this.dir = dir
  }

  /**
   * Rebuild every layer file that is missing or shows another revision than the store.
   * @param force - rebuild every file.
   * @returns the files written.
   */
  async refresh(force = false): Promise<string[]> {
    const written: string[] = []
    for (const layer of await this.#store().layers.list()) {
      const path = projectionPath(this.dir, layer.key)
      if (!force && this.#known.get(layer.key) === layer.revision && existsSync(path)) continue
      if (!force && projectedRevision(path) === layer.revision) {
        this.#known.set(layer.key, layer.revision)
        continue
      }
      await this.#write(layer, path)
      written.push(path)
    }
    return written
  }

  async #write(layer: LayerRevision, path: string): Promise<void> {
    const store = this.#store()
    const ref = layer.scope === 'global' ? ({ layer: 'global', workspace: null } as const) : ({ layer: 'workspace', workspace: layer.workspace! } as const)
    // Read the revision again after the content, so the header never claims more than it shows.
    for (let attempt = 0; ; attempt++) {
      const before = await store.layers.revision(layer)
      const memories = await store.memories.list({ ...layerFilter(ref), limit: MAX_SCAN })
      const persona = await store.persona.get(layer.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: layer.workspace! })
      const scenes = await store.scenes.list(layer.scope === 'global' ? { scope: 'global', limit: 1_000 } : { scope: 'workspace', workspace: layer.workspace!, includeGlobal: false, limit: 1_000 })
      const after = await store.layers.revision(layer)
      if (before.revision !== after.revision && attempt < 4) continue
      mkdirSync(join(path, '..'), { recursive: true })
      const temporary = `${path}.${process.pid}.tmp`
      try {
        writeFileSync(temporary, renderProjection(after, memories, persona, scenes))
        renameSync(temporary, path)
      } catch (error) {
        rmSync(temporary, { force: true })
        throw error
      }
      this.#known.set(layer.key, after.revision)
      return
    }
  }
}
