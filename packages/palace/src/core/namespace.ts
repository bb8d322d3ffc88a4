/**
 * One memory name's folder: its state, its turn index, its volumes and month summaries.
 * Every write goes through one {@link FileCommit}, volumes first and `.state.json` last.
 */
import { randomBytes } from 'node:crypto'
import { readdir, stat } from 'node:fs/promises'
import { join, posix, relative, sep } from 'node:path'
import { PalaceError } from './errors.js'
import { FileCommit, readTextIfExists, recoverCommits, TEMP_MARKER, type CrashHook } from './fs.js'
import { FORMAT_VERSION, INDEX_FILE, isMonth, monthOf, STATE_FILE, SUMMARY_FILE, volumeFileName } from './layout.js'
import { resolveInside } from './names.js'
import { mergeRanges, rangesOf, type TurnRange } from './ranges.js'
import { parseSummary, renderSummaryParagraph, summaryFileHeader, type SummaryParagraph } from './summary.js'
import type { Turn } from './turns.js'
import { lineCount, newFence, parseVolumeHeader, scanVolume, turnBlock, volumeHeader, VOLUME_VERSION } from './volume.js'

/** One archived turn, as `index.jsonl` records it. */
export interface IndexEntry {
  readonly v: number
  readonly turn: number
  readonly speaker: string
  readonly category: string
  /** Volume path relative to the namespace folder, `/`-separated. */
  readonly path: string
  /** 1-based line of the turn marker in the volume. */
  readonly line: number
  /** Lines of the turn block. */
  readonly lines: number
  readonly chars: number
  readonly tokens: number
  /** When the turn happened (epoch ms; 0 when unknown). */
  readonly at: number
  /** When it was archived (epoch ms). */
  readonly archivedAt: number
  /** Id of the archive operation that wrote it. */
  readonly archive: string
  readonly head: string
  readonly tools: readonly string[]
}

/** `.state.json`. */
export interface PalaceState {
  readonly version: number
  readonly sessionId: string
  readonly namespace: string
  /** Highest archived turn, or null before the first archive. */
  readonly watermark: number | null
  /** Archived turn ranges; ranges only break where an unarchived turn exists. */
  readonly ranges: readonly TurnRange[]
  readonly archives: number
  readonly turns: number
  readonly updatedAt: number
  readonly lastArchive?: {
    readonly id: string
    readonly at: number
    readonly kind: ArchiveKind
    readonly month: string
    readonly categories: readonly string[]
    readonly fromTurn: number
    readonly toTurn: number
  }
}

/** Who asked for an archive: the model through `palace_archive`, or the plugin before a compaction. */
export type ArchiveKind = 'model' | 'auto'

/** A validated archive request. */
export interface ArchivePlan {
  readonly kind: ArchiveKind
  /** Categories in first-appearance order with their turns (oldest first). */
  readonly groups: readonly { readonly category: string; readonly turns: readonly Turn[] }[]
  /** One summary per category. */
  readonly summaries: ReadonlyMap<string, string>
  /** Volume file prefix. */
  readonly selfName: string
  /** Every turn number the session has (to know where archived ranges may merge). */
  readonly knownTurns: readonly number[]
  readonly maxFileBytes: number
}

/** One volume touched by an archive. */
export interface ArchivedFile {
  readonly path: string
  readonly category: string
  readonly turns: readonly number[]
  readonly created: boolean
  readonly bytes: number
}

/** What an archive did. */
export interface ArchiveOutcome {
  readonly id: string
  readonly month: string
  readonly files: readonly ArchivedFile[]
  readonly turns: readonly number[]
  readonly state: PalaceState
}

/** One month with archives. */
export interface MonthInfo {
  readonly month: string
  /** Number of volume files in the month. */
  readonly files: number
  readonly categories: readonly string[]
  readonly hasSummary: boolean
}

/** Options of {@link NamespaceArchive}. */
export interface NamespaceArchiveOptions {
  readonly now: () => Date
  readonly crash?: CrashHook
}

interface CachedFile {
  readonly mtimeMs: number
  readonly size: number
  readonly content: string
  lines?: string[]
}

const VOLUME_NAME = /^(?<prefix>.+)-(?<stamp>\d{8}-\d{6})(?:-(?<seq>\d+))?\.md$/
const CACHE_LIMIT = 24

/** The archive of one memory name. Not safe for concurrent writers: the workspace serialises them. */
export class NamespaceArchive {
  private indexCache: { mtimeMs: number; size: number; entries: IndexEntry[]; raw: string } | undefined
  private readonly files = new Map<string, CachedFile>()

  constructor(
    /** Absolute folder of the namespace. */
    readonly dir: string,
    readonly namespace: string,
    private readonly options: NamespaceArchiveOptions,
  ) {}

  /**
   * Finish or discard an interrupted commit, then make the state agree with the index.
   * @param owner - the session that owns the memory (recorded if the state is rebuilt).
   */
  async recover(owner = ''): Promise<{ replayed: number; removedTemps: number; stateRebuilt: boolean }> {
    const { replayed, removedTemps } = await recoverCommits(this.dir)
    this.indexCache = undefined
    this.files.clear()
    const entries = await this.entries()
    const state = await this.readState()
    const fromIndex = mergeRanges(
      rangesOf(
        entries.map((entry) => entry.turn),
        entries.map((entry) => entry.turn),
      ),
    )
    const consistent =
      state !== undefined &&
      entries.every((entry) => state.ranges.some(([from, to]) => entry.turn >= from && entry.turn <= to)) &&
      state.ranges.every(([from, to]) => entries.some((entry) => entry.turn === from) && entries.some((entry) => entry.turn === to))
    if (consistent || entries.length === 0) return { replayed, removedTemps, stateRebuilt: false }
    const commit = new FileCommit(this.dir)
    await commit.stage(
      join(this.dir, STATE_FILE),
      stateJson({
        version: FORMAT_VERSION,
        sessionId: state?.sessionId || owner,
        namespace: this.namespace,
        watermark: entries.reduce((max, entry) => Math.max(max, entry.turn), Number.NEGATIVE_INFINITY),
        ranges: fromIndex,
        archives: new Set(entries.map((entry) => entry.archive)).size,
        turns: entries.length,
        updatedAt: this.options.now().getTime(),
        ...(state?.lastArchive ? { lastArchive: state.lastArchive } : {}),
      }),
    )
    await commit.commit()
    return { replayed, removedTemps, stateRebuilt: true }
  }

  /** `.state.json`, or undefined before the first archive. @throws PalaceError `unsupported-format` */
  async readState(): Promise<PalaceState | undefined> {
    const raw = await readTextIfExists(join(this.dir, STATE_FILE))
    if (raw === undefined) return undefined
    let state: PalaceState
    try {
      state = JSON.parse(raw) as PalaceState
    } catch (error) {
      throw new PalaceError('unsupported-format', `${join(this.dir, STATE_FILE)} is not valid JSON`, { cause: error })
    }
    if (state.version !== FORMAT_VERSION) {
      throw new PalaceError('unsupported-format', `${join(this.dir, STATE_FILE)} has format version ${JSON.stringify(state.version)}; this palace reads version ${FORMAT_VERSION}`)
    }
    return state
  }

  /** Archived ranges (empty before the first archive). */
  async ranges(): Promise<readonly TurnRange[]> {
    return (await this.readState())?.ranges ?? []
  }

  /** Every archived turn, sorted by turn. @throws PalaceError `unsupported-format` for an unknown line version */
  async entries(): Promise<IndexEntry[]> {
    const path = join(this.dir, INDEX_FILE)
    const info = await stat(path).catch(() => undefined)
    if (!info) {
      this.indexCache = undefined
      return []
    }
    if (this.indexCache && this.indexCache.mtimeMs === info.mtimeMs && this.indexCache.size === info.size) return this.indexCache.entries
    const raw = (await readTextIfExists(path)) ?? ''
    const entries: IndexEntry[] = []
    for (const [index, line] of raw.split('\n').entries()) {
      if (line.trim().length === 0) continue
      let entry: IndexEntry
      try {
        entry = JSON.parse(line) as IndexEntry
      } catch (error) {
        throw new PalaceError('unsupported-format', `${path}:${index + 1} is not valid JSON`, { cause: error })
      }
      if (entry.v !== FORMAT_VERSION) {
        throw new PalaceError('unsupported-format', `${path}:${index + 1} has format version ${JSON.stringify(entry.v)}; this palace reads version ${FORMAT_VERSION}`)
      }
      entries.push(entry)
    }
    entries.sort((a, b) => a.turn - b.turn)
    this.indexCache = { mtimeMs: info.mtimeMs, size: info.size, entries, raw }
    return entries
  }

  /**
   * Write the plan's turns into volumes, append the month summary, extend the index and the
   * state, all in one commit.
   * @throws PalaceError `overlap` when a turn is already archived (checked again under the lock)
   */
  async archive(plan: ArchivePlan, sessionId: string): Promise<ArchiveOutcome> {
    const now = this.options.now()
    const month = monthOf(now)
    const id = `${now.getTime().toString(36)}-${randomBytes(3).toString('hex')}`
    const existing = await this.entries()
    const archived = new Set(existing.map((entry) => entry.turn))
    const clash = plan.groups.flatMap((group) => group.turns).filter((turn) => archived.has(turn.turn))
    if (clash.length > 0) {
      throw new PalaceError('overlap', `turns ${clash.map((turn) => turn.turn).join(', ')} are already archived`)
    }
    const commit = new FileCommit(this.dir, this.options.crash)
    const newEntries: IndexEntry[] = []
    const files: ArchivedFile[] = []
    try {
      for (const group of plan.groups) {
        const written = await this.writeCategory(commit, month, group.category, group.turns, plan, now, id, newEntries)
        files.push(...written)
      }
      // Month summary: one paragraph per category.
      const summaryPath = join(this.dir, month, SUMMARY_FILE)
      let summary = (await readTextIfExists(summaryPath)) ?? summaryFileHeader(month, this.namespace)
      for (const group of plan.groups) {
        const turns = group.turns.map((turn) => turn.turn)
        summary += renderSummaryParagraph({
          category: group.category,
          kind: 'archive',
          fromTurn: Math.min(...turns),
          toTurn: Math.max(...turns),
          at: now.getTime(),
          body: plan.summaries.get(group.category) ?? '',
          turns,
        })
      }
      await commit.stage(summaryPath, summary)
      // Index: the old lines stay byte for byte; new lines are appended.
      const indexPath = join(this.dir, INDEX_FILE)
      const oldIndex = (await readTextIfExists(indexPath)) ?? ''
      const appended = newEntries.map((entry) => `${JSON.stringify(entry)}\n`).join('')
      await commit.stage(indexPath, `${oldIndex}${oldIndex.length > 0 && !oldIndex.endsWith('\n') ? '\n' : ''}${appended}`)
      // State last: it is the summary of everything above.
      const previous = await this.readState()
      const all = [...existing, ...newEntries]
      const allTurns = all.map((entry) => entry.turn).sort((a, b) => a - b)
      const known = [...new Set([...plan.knownTurns, ...allTurns])].sort((a, b) => a - b)
      const turnNumbers = newEntries.map((entry) => entry.turn)
      const state: PalaceState = {
        version: FORMAT_VERSION,
        sessionId: previous?.sessionId || sessionId,
        namespace: this.namespace,
        watermark: Math.max(...allTurns),
        ranges: mergeRanges([...(previous?.ranges ?? []), ...rangesOf(turnNumbers, known)], known),
        archives: (previous?.archives ?? 0) + 1,
        turns: all.length,
        updatedAt: now.getTime(),
        lastArchive: {
          id,
          at: now.getTime(),
          kind: plan.kind,
          month,
          categories: plan.groups.map((group) => group.category),
          fromTurn: Math.min(...turnNumbers),
          toTurn: Math.max(...turnNumbers),
        },
      }
      await commit.stage(join(this.dir, STATE_FILE), stateJson(state))
      await commit.commit()
      this.files.clear()
      return { id, month, files, turns: turnNumbers.sort((a, b) => a - b), state }
    } catch (error) {
      // Before the journal exists the temps are garbage; after it, abort() leaves them for
      // recovery, which finishes the commit.
      await commit.abort().catch(() => undefined)
      throw error
    }
  }

  private async writeCategory(
    commit: FileCommit,
    month: string,
    category: string,
    turns: readonly Turn[],
    plan: ArchivePlan,
    now: Date,
    archiveId: string,
    out: IndexEntry[],
  ): Promise<ArchivedFile[]> {
    const folder = join(this.dir, month, category)
    const prefix = `${plan.selfName}-${category}`
    const names = await readdir(folder).catch(() => [] as string[])
    const volumes = names
      .filter((name) => !name.includes(TEMP_MARKER))
      .map((name) => ({ name, match: VOLUME_NAME.exec(name) }))
      .filter((entry) => entry.match?.groups?.prefix === prefix)
      .sort((a, b) => a.match!.groups!.stamp!.localeCompare(b.match!.groups!.stamp!) || Number(a.match!.groups!.seq ?? 1) - Number(b.match!.groups!.seq ?? 1))
    interface Current {
      name: string
      content: string
      bytes: number
      lines: number
      fence: string
      turns: number[]
      created: boolean
      hasTurns: boolean
    }
    const written: ArchivedFile[] = []
    let current: Current | undefined
    const latest = volumes[volumes.length - 1]
    if (latest) {
      const content = (await readTextIfExists(join(folder, latest.name))) ?? ''
      const header = parseVolumeHeader(content)
      // A volume from another format version is never appended to: a new volume starts.
      if (header && header.version === VOLUME_VERSION) {
        current = {
          name: latest.name,
          content,
          bytes: Buffer.byteLength(content),
          lines: lineCount(content),
          fence: header.fence,
          turns: [],
          created: false,
          hasTurns: scanVolume(content).length > 0,
        }
      }
    }
    const taken = new Set(names)
    const flush = async (): Promise<void> => {
      if (!current || current.turns.length === 0) return
      const path = join(folder, current.name)
      await commit.stage(path, current.content)
      written.push({ path: this.relative(path), category, turns: current.turns, created: current.created, bytes: current.bytes })
    }
    for (const turn of turns) {
      const fence = current?.fence ?? newFence()
      const block = turnBlock(turn, fence)
      const blockBytes = Buffer.byteLength(block)
      if (!current || (current.hasTurns && current.bytes + blockBytes > plan.maxFileBytes)) {
        await flush()
        let sequence = 1
        let name = volumeFileName(plan.selfName, category, now, sequence)
        while (taken.has(name)) name = volumeFileName(plan.selfName, category, now, ++sequence)
        taken.add(name)
        const newVolumeFence = newFence()
        const header = volumeHeader(newVolumeFence, `${plan.selfName} · ${category} · ${this.namespace}`)
        current = {
          name,
          content: header,
          bytes: Buffer.byteLength(header),
          lines: lineCount(header),
          fence: newVolumeFence,
          turns: [],
          created: true,
          hasTurns: false,
        }
      }
      const cur: Current = current
      const finalBlock = cur.fence === fence ? block : turnBlock(turn, cur.fence)
      const line = cur.lines + 1
      const blockLines = lineCount(finalBlock)
      cur.content += finalBlock
      cur.bytes += Buffer.byteLength(finalBlock)
      cur.lines += blockLines
      cur.turns.push(turn.turn)
      cur.hasTurns = true
      out.push({
        v: FORMAT_VERSION,
        turn: turn.turn,
        speaker: turn.speaker,
        category,
        path: this.relative(join(folder, cur.name)),
        line,
        lines: blockLines,
        chars: turn.body.length,
        tokens: turn.tokens,
        at: turn.at,
        archivedAt: now.getTime(),
        archive: archiveId,
        head: turn.head,
        tools: turn.tools,
      })
    }
    await flush()
    return written
  }

  /** A path relative to the namespace folder, `/`-separated. */
  relative(path: string): string {
    return relative(this.dir, path).split(sep).join(posix.sep)
  }

  /** Absolute path of a namespace-relative path, refusing traversal. @throws PalaceError `path-refused` */
  resolve(path: string): string {
    return resolveInside(this.dir, path)
  }

  /** The content of a file inside the namespace (cached by mtime and size). */
  async readFile(relativePath: string): Promise<string> {
    const path = this.resolve(relativePath)
    const info = await stat(path).catch(() => undefined)
    if (!info || !info.isFile()) throw new PalaceError('not-found', `no file ${relativePath} in memory "${this.namespace}"`)
    const cached = this.files.get(path)
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.content
    const content = (await readTextIfExists(path)) ?? ''
    this.files.set(path, { mtimeMs: info.mtimeMs, size: info.size, content })
    if (this.files.size > CACHE_LIMIT) this.files.delete(this.files.keys().next().value!)
    return content
  }

  /** The lines of a file (cached). */
  async readLines(relativePath: string): Promise<string[]> {
    const content = await this.readFile(relativePath)
    const cached = this.files.get(this.resolve(relativePath))
    if (cached?.lines) return cached.lines
    const lines = content.split('\n')
    if (cached) cached.lines = lines
    return lines
  }

  /** The archived text of one turn (marker line excluded). */
  async turnText(entry: IndexEntry): Promise<string> {
    const lines = await this.readLines(entry.path)
    return lines
      .slice(entry.line, entry.line - 1 + entry.lines)
      .join('\n')
      .replace(/\n+$/, '\n')
  }

  /** Months with archives, newest first. */
  async months(): Promise<MonthInfo[]> {
    const names = await readdir(this.dir, { withFileTypes: true }).catch(() => [])
    const months: MonthInfo[] = []
    for (const entry of names) {
      if (!entry.isDirectory() || !isMonth(entry.name)) continue
      const folder = join(this.dir, entry.name)
      const inside = await readdir(folder, { withFileTypes: true }).catch(() => [])
      const categories: string[] = []
      let files = 0
      for (const child of inside) {
        if (!child.isDirectory()) continue
        const volumes = (await readdir(join(folder, child.name)).catch(() => [] as string[])).filter((name) => name.endsWith('.md') && !name.includes(TEMP_MARKER))
        if (volumes.length > 0) categories.push(child.name)
        files += volumes.length
      }
      months.push({ month: entry.name, files, categories: categories.sort(), hasSummary: inside.some((child) => child.isFile() && child.name === SUMMARY_FILE) })
    }
    return months.sort((a, b) => b.month.localeCompare(a.month))
  }

  /** The raw `_summary.md` of a month, or undefined. */
  async summaryText(month: string): Promise<string | undefined> {
    if (!isMonth(month)) throw new PalaceError('invalid-argument', `month must look like YYYY-MM, got ${JSON.stringify(month)}`)
    return readTextIfExists(join(this.dir, month, SUMMARY_FILE))
  }

  /** The paragraphs of a month summary (empty when there is none). */
  async summaryParagraphs(month: string): Promise<SummaryParagraph[]> {
    const text = await this.summaryText(month)
    return text === undefined ? [] : parseSummary(text)
  }

  /** Append a note paragraph (for turns not archived yet) to the current month's summary. */
  async appendNote(note: { category: string; fromTurn: number; toTurn: number; body: string }): Promise<{ month: string; path: string }> {
    const now = this.options.now()
    const month = monthOf(now)
    const path = join(this.dir, month, SUMMARY_FILE)
    const current = (await readTextIfExists(path)) ?? summaryFileHeader(month, this.namespace)
    const commit = new FileCommit(this.dir, this.options.crash)
    await commit.stage(path, current + renderSummaryParagraph({ ...note, kind: 'note', at: now.getTime() }))
    await commit.commit()
    return { month, path: this.relative(path) }
  }
}

function stateJson(state: PalaceState): string {
  return `${JSON.stringify(state, null, 2)}\n`
}
