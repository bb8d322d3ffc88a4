/**
 * `dsh-memory import <path>`: bring memories in from
 * - our own JSONL export (`store.importJsonl`: idempotent on ids, all or nothing);
 * - `CLAUDE.md` / `AGENTS.md` / `CLAUDE.local.md` / `.claude/rules/*.md` and Claude Code's
 *   auto-memory folder, as instruction and preference memories (the splitter and the writer are
 *   `@dsh-memory/recall`'s, shared with the model tool `memory_import`);
 * - a cue-bank JSON file of the reference plugin (`importCueBankJson` of `@dsh-memory/cue-bank`);
 * - a memory-palace folder, indexed into the palace's own tables the way the palace plugin
 *   indexes it (`ArchiveIndex.sync` of `@dsh-memory/palace`), so `palace_search` finds it at once;
 * - a root of the reference memory-tree plugin (`~/.dsh/memory-tree` or `$MEMORY_TREE_ROOT`),
 *   into the tree's tables (`importReferenceTree` of `@dsh-memory/tree`).
 * Every import is idempotent: running it twice adds nothing the second time.
 */
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import type { Command } from 'commander'
import { Option } from 'commander'
import { importCueBankJson, isCueBankError } from '@dsh-memory/cue-bank'
import { ArchiveIndex, isPalaceError, PalaceWorkspace, resolvePalaceOptions } from '@dsh-memory/palace'
import { autoMemoryItem, importInstructionItems, type InstructionItem, type PlannedImport, splitInstructions } from '@dsh-memory/recall'
import { isMemoryStoreError, type MemoryStore, type RecordCounts, WORKSPACE_IDENTITIES, type WorkspaceIdentity } from '@dsh-memory/store'
import { importReferenceTree, isTreeError, openMemoryTree, type ReferenceImportReport } from '@dsh-memory/tree'
import { resolveCliDataDir, resolveDataSource, withDataDir, withStore } from '../data/data-dir.ts'
import { isDatabaseUrl } from '../data/database-url.ts'
import { workspaceFilter } from '../data/workspace.ts'
import { type CliIO, CliUsageError, printJson, println } from '../io.ts'
import { createProgress } from '../progress.ts'
import { detectFormat, type ImportFormat, IMPORT_FORMATS, instructionFiles, instructionTarget } from '../import/sources.ts'
import type { BenchProgress } from '../bench/locomo.ts'

/** What one import did. */
export type ImportReport =
  | { readonly format: 'jsonl'; readonly path: string; readonly inserted: RecordCounts; readonly skipped: RecordCounts }
  | {
      readonly format: 'instructions'
      readonly path: string
      readonly dryRun: boolean
      readonly files: { readonly file: string; readonly scope: string; readonly workspace: string | null; readonly items: number }[]
      readonly inserted: number
      readonly skipped: number
      readonly memories: { readonly id: string | null; readonly kind: string; readonly scope: string; readonly workspace: string | null; readonly text: string; readonly duplicate: boolean }[]
    }
  | { readonly format: 'cue-bank'; readonly path: string; readonly partition: string; readonly inserted: { topics: number; idioms: number }; readonly skipped: { topics: number; idioms: number } }
  | {
      readonly format: 'palace'
      readonly path: string
      readonly workspace: string
      readonly namespaces: { readonly namespace: string; readonly sessionId: string; readonly turns: number; readonly inserted: number }[]
    }
  | ({ readonly format: 'memory-tree'; readonly path: string } & ReferenceImportReport)

interface ImportOptions {
  dataDir?: string
  databaseUrl?: string
  format: ImportFormat | 'auto'
  scope?: 'global' | 'workspace'
  workspace?: string
  /** How a folder becomes its workspace id (the store row's `workspaceIdentity`); default `git-remote`. */
  workspaceIdentity?: WorkspaceIdentity
  partition?: string
  embeddingModel?: string
  dryRun?: boolean
  json?: boolean
  quiet?: boolean
}

/** Lines of a file, ticking the progress for each. */
async function* fileLines(path: string, progress: BenchProgress): AsyncGenerator<string> {
  const reader = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity })
  for await (const line of reader) {
    progress.tick()
    yield line
  }
}

function countLines(path: string): number {
  const buffer = readFileSync(path)
  let lines = 0
  for (const byte of buffer) if (byte === 10) lines++
  return buffer.length > 0 && buffer[buffer.length - 1] !== 10 ? lines + 1 : lines
}

async function importJsonlFile(store: MemoryStore, path: string, progress: BenchProgress): Promise<ImportReport> {
  progress.start('import jsonl', countLines(path))
  try {
    const result = await store.importJsonl(fileLines(path, progress), { actor: 'cli' })
    return { format: 'jsonl', path, inserted: result.inserted, skipped: result.skipped }
  } catch (error) {
    if (isMemoryStoreError(error, 'unsupported-format') || isMemoryStoreError(error, 'invalid-argument')) {
      throw new CliUsageError(`${path} is not a dsh-memory JSONL export: ${(error as Error).message}`, { cause: error })
    }
    throw error
  } finally {
    progress.stop()
  }
}

async function importInstructions(store: MemoryStore, path: string, options: ImportOptions, progress: BenchProgress): Promise<ImportReport> {
  const files = instructionFiles(path)
  if (files.length === 0) throw new CliUsageError(`${path} holds no Markdown files`)
  const planned: PlannedImport[] = []
  const perFile: { file: string; scope: string; workspace: string | null; items: number }[] = []
  // Keyed as the hosts key a session in that folder: a git clone's memories land under its project id.
  const workspaceId = (folder: string | null) => (folder === null ? null : workspaceFilter(folder, options.workspaceIdentity))
  for (const file of files) {
    const target = instructionTarget(file, { ...(options.scope ? { scope: options.scope } : {}), ...(options.workspace ? { workspace: options.workspace } : {}) })
    const text = readFileSync(file, 'utf8')
    let items: InstructionItem[]
    if (target.autoMemory && basename(file) !== 'MEMORY.md') {
      const item = autoMemoryItem(text)
      items = item ? [item] : []
    } else if (target.autoMemory && files.length > 1) {
      // MEMORY.md indexes the other files of the folder: their content is imported from them.
      items = []
    } else {
      items = splitInstructions(text)
    }
    for (const item of items) {
      // A `user` auto memory describes the person, not the project: it applies everywhere.
      const scope = options.scope ?? (item.memoryType === 'user' ? 'global' : target.scope)
      const workspace = scope === 'global' ? null : workspaceId(target.workspace)
      if (scope === 'workspace' && !workspace) {
        throw new CliUsageError(`cannot find the project folder of Claude Code project ${JSON.stringify(target.unresolvedSlug)} (${file}); pass --workspace <dir>`)
      }
      planned.push({ file, item, scope, workspace })
    }
    perFile.push({ file, scope: target.scope, workspace: workspaceId(target.workspace), items: items.length })
  }

  progress.start('import instructions', planned.length)
  try {
    const { inserted, skipped, memories } = await importInstructionItems(store, planned, { actor: 'cli', dryRun: options.dryRun === true, onItem: () => progress.tick() })
    return { format: 'instructions', path, dryRun: options.dryRun === true, files: perFile, inserted, skipped, memories }
  } finally {
    progress.stop()
  }
}

async function importCueBank(store: MemoryStore, path: string, options: ImportOptions): Promise<ImportReport> {
  try {
    const result = await importCueBankJson(store, readFileSync(path, 'utf8'), {
      ...(options.partition ? { partition: cuePartition(options.partition, options.workspaceIdentity) } : {}),
      ...(options.workspace ? { workspace: workspaceFilter(options.workspace, options.workspaceIdentity) } : {}),
      ...(options.embeddingModel ? { embeddingModel: options.embeddingModel } : {}),
    })
    return { format: 'cue-bank', path, partition: result.partition, inserted: { ...result.inserted }, skipped: { ...result.skipped } }
  } catch (error) {
    if (isCueBankError(error, 'invalid-import')) throw new CliUsageError(`${path} is not a cue-bank file: ${(error as Error).message}`, { cause: error })
    throw error
  }
}

/** A `--partition` value with its `workspace:<dir>` named by the workspace id the hosts key it by. */
function cuePartition(partition: string, identity: WorkspaceIdentity | undefined): string {
  const folder = /^workspace:(.+)$/.exec(partition)?.[1]
  return folder === undefined ? partition : `workspace:${workspaceFilter(folder, identity)}`
}

/** The workspace and palace folder name of an import path (`<workspace>/memory-palace` or the workspace). */
export function palaceLocation(path: string, workspaceOption?: string): { workspace: string; rootDirName: string } {
  const absolute = resolve(path)
  const isPalaceRoot = basename(absolute) === 'memory-palace' || existsSync(join(absolute, '.namespaces.json'))
  const rootDirName = isPalaceRoot ? basename(absolute) : 'memory-palace'
  const workspace = workspaceOption ? resolve(workspaceOption) : isPalaceRoot ? dirname(absolute) : absolute
  return { workspace, rootDirName }
}

async function importPalace(store: MemoryStore, path: string, options: ImportOptions, progress: BenchProgress): Promise<ImportReport> {
  const { workspace, rootDirName } = palaceLocation(path, options.workspace)
  const palaceRoot = isDirectory(join(resolve(path), rootDirName)) ? join(resolve(path), rootDirName) : resolve(path)
  if (!isDirectory(palaceRoot)) throw new CliUsageError(`${path} is not a memory-palace folder`)
  try {
    // The palace folder may sit elsewhere than <workspace>/<root> when --workspace names where it will live.
    const palace = new PalaceWorkspace(dirname(palaceRoot), resolvePalaceOptions({ rootDirName: basename(palaceRoot) }), { now: () => new Date() })
    const sessions = await palace.sessions()
    const names = await palace.listNamespaces()
    if (names.length === 0) throw new CliUsageError(`${palaceRoot} holds no archived memory (no <name>/.state.json)`)
    const index = new ArchiveIndex(store)
    const namespaces: { namespace: string; sessionId: string; turns: number; inserted: number }[] = []
    progress.start('import palace', names.length)
    try {
      for (const namespace of names) {
        const archive = await palace.openArchive(namespace)
        const sessionId = Object.entries(sessions).find(([, name]) => name === namespace)?.[0] ?? (await archive.readState())?.sessionId ?? ''
        const result = await index.sync(workspace, { namespace, archive })
        namespaces.push({ namespace, sessionId, turns: (await archive.entries()).length, inserted: result.inserted })
        progress.tick(namespace)
      }
    } finally {
      progress.stop()
    }
    return { format: 'palace', path: palaceRoot, workspace, namespaces }
  } catch (error) {
    if (isPalaceError(error) && ['unsupported-format', 'invalid-config', 'invalid-name'].includes(error.code)) {
      throw new CliUsageError(`${palaceRoot}: ${(error as Error).message}`, { cause: error })
    }
    throw error
  }
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory()
}

async function importMemoryTree(store: MemoryStore, path: string, options: ImportOptions): Promise<ImportReport> {
  // The projection goes where the plugin writes it by default: <data dir>/tree, next to the
  // database; on PostgreSQL this machine's data dir (as for dsh-memory-tree-mcp).
  const dataDir = isDatabaseUrl(store.path) ? resolveCliDataDir(undefined) : dirname(store.path)
  const opened = await openMemoryTree({ store, projectionDir: join(dataDir, 'tree') })
  try {
    const report = await importReferenceTree(opened.tree, path, options.workspace ? { workspace: workspaceFilter(options.workspace, options.workspaceIdentity) } : {})
    return { format: 'memory-tree', path, ...report }
  } catch (error) {
    if (isTreeError(error, 'invalid-argument')) throw new CliUsageError((error as Error).message, { cause: error })
    throw error
  } finally {
    await opened.close()
  }
}

/** Run one import into an open store. */
export async function runImport(store: MemoryStore, path: string, format: ImportFormat, options: ImportOptions, progress: BenchProgress): Promise<ImportReport> {
  if (format === 'jsonl') return importJsonlFile(store, path, progress)
  if (format === 'instructions') return importInstructions(store, path, options, progress)
  if (format === 'cue-bank') return importCueBank(store, path, options)
  if (format === 'memory-tree') return importMemoryTree(store, path, options)
  return importPalace(store, path, options, progress)
}

/** The text form of an import report. */
export function formatImport(report: ImportReport): string {
  const counts = (value: RecordCounts) =>
    Object.entries(value)
      .map(([key, count]) => `${count} ${key}`)
      .join(', ')
  switch (report.format) {
    case 'jsonl':
      return `imported ${report.path}: inserted ${counts(report.inserted)}; already present ${counts(report.skipped)}`
    case 'instructions': {
      const lines = [`${report.dryRun ? 'would import' : 'imported'} ${report.path}: ${report.inserted} new memories, ${report.skipped} already present`]
      for (const file of report.files) lines.push(`  ${file.file}: ${file.items} items → ${file.scope}${file.workspace ? ` ${file.workspace}` : ''}`)
      for (const memory of report.memories) {
        const text = memory.text.replace(/\s+/g, ' ')
        lines.push(`  ${memory.duplicate ? '=' : '+'} ${memory.kind.padEnd(11)} ${text.length > 90 ? `${text.slice(0, 89)}…` : text}`)
      }
      return lines.join('\n')
    }
    case 'cue-bank':
      return `imported ${report.path} into partition ${report.partition}: ${report.inserted.topics} topics, ${report.inserted.idioms} idioms (already present: ${report.skipped.topics} topics, ${report.skipped.idioms} idioms)`
    case 'memory-tree': {
      const lines = [`imported memory-tree root ${report.root}${report.activeProject ? ` (active project "${report.activeProject}")` : ''}`]
      for (const project of report.projects) {
        lines.push(
          project.alreadyImported
            ? `  "${project.name}": already imported, nothing written`
            : `  "${project.name}": ${project.items} mainline items, ${project.turns} turns, ${project.branches.open} open + ${project.branches.archived} archived branches, ${project.checkpoints} checkpoints, ${project.chat} chat messages`,
        )
      }
      return lines.join('\n')
    }
    case 'palace': {
      const lines = [`indexed memory palace ${report.path} for workspace ${report.workspace}`]
      for (const entry of report.namespaces) lines.push(`  "${entry.namespace}": ${entry.turns} archived turns, ${entry.inserted} index rows added`)
      return lines.join('\n')
    }
  }
}

/** Register `import`. */
export function registerImport(program: Command, io: CliIO): void {
  withDataDir(program.command('import'))
    .description('Import our JSONL export, CLAUDE.md / AGENTS.md / Claude Code memory files, a cue-bank JSON file, a memory-palace folder or a memory-tree root (~/.dsh/memory-tree, $MEMORY_TREE_ROOT). Idempotent.')
    .argument('<path>', 'a file or folder')
    .addOption(new Option('--format <format>', 'what the path is (default: detected)').choices([...IMPORT_FORMATS, 'auto']).default('auto'))
    .addOption(new Option('--scope <scope>', 'instructions: global or workspace (default: from where the file lives)').choices(['global', 'workspace']))
    .option('--workspace <dir>', 'instructions: the project folder; cue-bank: import into this workspace’s partition; palace: the workspace the folder belongs to; memory-tree: the workspace of the active project')
    .addOption(
      new Option('--workspace-identity <identity>', 'how a folder becomes its workspace id, as the store row\'s workspaceIdentity: git-remote (a git clone with a remote is its project) or path')
        .choices([...WORKSPACE_IDENTITIES])
        .default('git-remote'),
    )
    .option('--partition <key>', 'cue-bank: target partition (global, workspace:<dir> or user:<id>)')
    .option('--embedding-model <model>', 'cue-bank: the model that produced the file’s embeddings (without it vectors are dropped)')
    .option('--dry-run', 'instructions: show the memories without writing them')
    .option('--json', 'print the import report as one JSON object')
    .option('--quiet', 'no progress output')
    .action(async (path: string, options: ImportOptions) => {
      const format = options.format === 'auto' ? detectFormat(path) : options.format
      if (!existsSync(path)) throw new CliUsageError(`cannot read ${path}: no such file or directory`)
      const progress = createProgress(io, options.quiet === true)
      const source = resolveDataSource(options)
      const report = await withStore(source, { create: true }, (store) => runImport(store, path, format, options, progress))
      if (options.json) printJson(io, report)
      else println(io, formatImport(report))
    })
}
