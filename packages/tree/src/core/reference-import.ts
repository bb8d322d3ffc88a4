/**
 * Import of a root of the reference memory-tree plugin (`004`, default `~/.dsh/memory-tree`,
 * or `$MEMORY_TREE_ROOT`). Its README lays the root out as:
 *
 * ```
 * _config.json                 active project, routing words
 * <project>/mainline.state.json  constraints / decisions / outcomes / open questions
 * <project>/mainline.events.jsonl recent mainline turns
 * <project>/branches/<id>/{meta.json, events.jsonl, conclusion.md}
 * <project>/checkpoints/<id>.md  frozen review documents
 * <project>/chat/chat.events.jsonl the chit-chat partition
 * ```
 *
 * The README names the files but not every key, so field names are read leniently (the
 * aliases below); a value of the wrong shape fails the whole import naming the file and the
 * field, before anything is written. `mainline.md` is derived from the state file and skipped.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { isGitWorkspace } from '@dsh-memory/store'
import { TreeError } from './errors.js'
import { summarizeChat } from './render.js'
import { clip, oneLine, prepareText } from './text.js'
import type { MemoryTree } from './tree.js'
import { CHECKPOINT_STATE_VERSION, type ItemKind } from './types.js'

/** Source label of everything imported from a reference root. */
export const REFERENCE_IMPORT_SOURCE = 'import:memory-tree'

// State keys of each item kind, in the names the reference's README uses (约束/决策/成果/待解).
const STATE_KEYS: Record<ItemKind, readonly string[]> = {
  constraint: ['constraints', 'coreConstraints', '约束'],
  decision: ['decisions', 'keyDecisions', '决策'],
  outcome: ['outcomes', 'results', 'achievements', '成果'],
  question: ['openQuestions', 'questions', 'pending', 'todo', '待解'],
}
const TEXT_KEYS = ['text', 'content', 'summary', 'title', 'message'] as const
const MAX_ITEM_CHARS = 4_000
const MAX_DOCUMENT_CHARS = 8_000
const MAX_EVENT_CHARS = 16_000

interface PlannedEvent {
  role: 'user' | 'assistant' | 'note'
  text: string
}
interface PlannedBranch {
  referenceId: string
  title: string
  open: boolean
  events: PlannedEvent[]
  conclusion: string | null
}
interface PlannedProject {
  name: string
  dir: string
  items: Array<{ kind: ItemKind; text: string }>
  turns: PlannedEvent[]
  branches: PlannedBranch[]
  checkpoints: Array<{ referenceId: string; title: string; document: string }>
  chat: PlannedEvent[]
}

/** What {@link importReferenceTree} did, per project. */
export interface ReferenceImportReport {
  root: string
  activeProject: string | null
  projects: Array<{
    name: string
    projectId: string
    /** True when this root's project was imported before: nothing was written again. */
    alreadyImported: boolean
    items: number
    turns: number
    branches: { open: number; archived: number }
    checkpoints: number
    chat: number
  }>
}

function fail(file: string, field: string, problem: string): never {
  throw new TreeError('invalid-argument', `${file}: ${field} ${problem}`)
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown
  } catch (error) {
    return fail(file, '(whole file)', `is not valid JSON: ${(error as Error).message}`)
  }
}

/** The text of a state entry or an event: a string, or an object with one of the text keys. */
function entryText(value: unknown, file: string, field: string): string {
  if (typeof value === 'string') return value
  if (value && typeof value === 'object') {
    for (const key of TEXT_KEYS) {
      const text = (value as Record<string, unknown>)[key]
      if (typeof text === 'string') return text
    }
  }
  return fail(file, field, `must be a string or an object with one of ${TEXT_KEYS.join(', ')}`)
}

function readEvents(file: string): PlannedEvent[] {
  if (!existsSync(file)) return []
  const events: PlannedEvent[] = []
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      if (line.trim() === '') return
      let value: unknown
      try {
        value = JSON.parse(line)
      } catch {
        fail(file, `line ${index + 1}`, 'is not valid JSON')
      }
      const text = entryText(value, file, `line ${index + 1}`).trim()
      const role = (value as { role?: unknown; type?: unknown })?.role ?? (value as { type?: unknown })?.type
      if (text) events.push({ role: role === 'assistant' ? 'assistant' : role === 'user' || role === undefined ? 'user' : 'note', text: prepareText(text, `${file}: line ${index + 1}`, MAX_EVENT_CHARS) })
    })
  return events
}

function readState(file: string): Array<{ kind: ItemKind; text: string }> {
  if (!existsSync(file)) return []
  const state = readJson(file)
  if (!state || typeof state !== 'object' || Array.isArray(state)) fail(file, '(root)', 'must be an object')
  const items: Array<{ kind: ItemKind; text: string }> = []
  for (const [kind, keys] of Object.entries(STATE_KEYS) as Array<[ItemKind, readonly string[]]>) {
    for (const key of keys) {
      const list = (state as Record<string, unknown>)[key]
      if (list === undefined) continue
      if (!Array.isArray(list)) fail(file, key, 'must be a list')
      list.forEach((entry, index) => {
        const text = oneLine(entryText(entry, file, `${key}[${index}]`))
        // Secrets are redacted on the way in, as in everything the tree stores.
        if (text) items.push({ kind, text: prepareText(text, `${file}: ${key}[${index}]`, MAX_ITEM_CHARS) })
      })
    }
  }
  return items
}

function readBranch(dir: string, referenceId: string): PlannedBranch {
  const metaFile = join(dir, 'meta.json')
  const meta = (existsSync(metaFile) ? readJson(metaFile) : {}) as Record<string, unknown>
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) fail(metaFile, '(root)', 'must be an object')
  const status = meta.status ?? 'active'
  if (status !== 'active' && status !== 'archived' && status !== 'merged') fail(metaFile, 'status', `must be active or archived, got ${JSON.stringify(status)}`)
  const title = meta.title ?? meta.name ?? referenceId
  if (typeof title !== 'string' || title.trim() === '') fail(metaFile, 'title', 'must be a non-empty string')
  const conclusionFile = join(dir, 'conclusion.md')
  const conclusion = existsSync(conclusionFile) ? readFileSync(conclusionFile, 'utf8').trim() || null : null
  return { referenceId, title: clip(oneLine(title), 200), open: status === 'active', events: readEvents(join(dir, 'events.jsonl')), conclusion }
}

function subdirectories(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => statSync(join(dir, name)).isDirectory())
    .sort()
}

function readProject(dir: string): PlannedProject {
  const checkpointsDir = join(dir, 'checkpoints')
  const checkpoints = existsSync(checkpointsDir)
    ? readdirSync(checkpointsDir)
        .filter((name) => name.endsWith('.md'))
        // The reference's ids start with their time, so name order is creation order (file
        // times are not: a copy or a checkout rewrites them); the last becomes the baseline.
        .sort()
        .map((name) => {
          const document = readFileSync(join(checkpointsDir, name), 'utf8').trim()
          const heading = /^#+\s+(.+)$/m.exec(document)?.[1]
          return { referenceId: name.slice(0, -3), title: clip(oneLine(heading ?? name.slice(0, -3)), 200), document }
        })
    : []
  return {
    name: basename(dir),
    dir,
    items: readState(join(dir, 'mainline.state.json')),
    turns: readEvents(join(dir, 'mainline.events.jsonl')),
    branches: subdirectories(join(dir, 'branches')).map((id) => readBranch(join(dir, 'branches', id), id)),
    checkpoints,
    chat: readEvents(join(dir, 'chat', 'chat.events.jsonl')),
  }
}

/** True when `dir` looks like a reference memory-tree root. */
export function isReferenceTreeRoot(dir: string): boolean {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return false
  if (existsSync(join(dir, '_config.json'))) return true
  return subdirectories(dir).some((name) => existsSync(join(dir, name, 'mainline.state.json')))
}

/**
 * Import a reference memory-tree root into `tree`: every project with its mainline state,
 * recent turns, branches (open ones stay open; archived ones are closed as merged with their
 * conclusion), checkpoints (the newest becomes the baseline, documents kept verbatim) and chat
 * partition. The active project of `_config.json` is bound to `workspace` when one is given: a
 * workspace id as the hosts key it (`git:<host>/<owner>/<repo>`, see the store's `workspaceOf`),
 * or a directory, bound as its absolute path.
 * Idempotent per root and project: a second run writes nothing.
 * @throws TreeError `invalid-argument` naming the file and field of bad input (nothing written).
 */
export async function importReferenceTree(tree: MemoryTree, rootDir: string, options: { workspace?: string; now?: () => number } = {}): Promise<ReferenceImportReport> {
  const root = resolve(rootDir)
  if (!isReferenceTreeRoot(root)) throw new TreeError('invalid-argument', `${root} is not a memory-tree root (no _config.json and no <project>/mainline.state.json)`)
  const configFile = join(root, '_config.json')
  const config = (existsSync(configFile) ? readJson(configFile) : {}) as Record<string, unknown>
  const active = config.activeProject ?? config.active ?? config.project ?? null
  if (active !== null && typeof active !== 'string') fail(configFile, 'activeProject', 'must be a string')
  // Read everything first: bad input anywhere writes nothing.
  const plans = subdirectories(root)
    .filter((name) => !name.startsWith('_') && !name.startsWith('.'))
    .map((name) => readProject(join(root, name)))
  const now = options.now ?? Date.now
  const repository = tree.repository
  const report: ReferenceImportReport = { root, activeProject: active, projects: [] }
  for (const plan of plans) {
    const workspace = plan.name === active && options.workspace ? (isGitWorkspace(options.workspace) ? options.workspace : resolve(options.workspace)) : null
    const { project } = await repository.ensureProject({ name: plan.name, workspace, now: now() })
    const marker = `${REFERENCE_IMPORT_SOURCE}:${root}:${plan.name}`
    const counts = { items: plan.items.length, turns: plan.turns.length, branches: { open: plan.branches.filter((b) => b.open).length, archived: plan.branches.filter((b) => !b.open).length }, checkpoints: plan.checkpoints.length, chat: plan.chat.length }
    if (await repository.getSetting(marker)) {
      report.projects.push({ name: plan.name, projectId: project.id, alreadyImported: true, ...counts })
      continue
    }
    await writeProject(tree, project.id, plan, workspace ?? '', now)
    await repository.setSetting(marker, String(now()), now())
    report.projects.push({ name: plan.name, projectId: project.id, alreadyImported: false, ...counts })
  }
  if (report.projects.length > 0) await tree.rebuildProjection()
  return report
}

async function writeProject(tree: MemoryTree, projectId: string, plan: PlannedProject, workspace: string, now: () => number): Promise<void> {
  const repository = tree.repository
  const sessionId = REFERENCE_IMPORT_SOURCE
  // Checkpoints first: each one clears its stage, and the state, branches and turns on disk
  // belong to the stage after the newest checkpoint.
  for (const checkpoint of plan.checkpoints) {
    const project = (await repository.getProject(projectId))!
    await repository.createCheckpoint({
      projectId,
      expectedRevision: project.revision,
      title: checkpoint.title,
      review: clip(checkpoint.document || checkpoint.title, MAX_DOCUMENT_CHARS),
      document: checkpoint.document || `# ${checkpoint.title}`,
      state: { version: CHECKPOINT_STATE_VERSION, items: [], branches: [], turnCount: 0 },
      turnsUpTo: (await repository.turnWatermark(projectId)).lastId,
      now: now(),
    })
  }
  if (plan.items.length > 0) {
    await repository.addItems({ projectId, items: plan.items.map((item) => ({ ...item, source: REFERENCE_IMPORT_SOURCE })), now: now() })
  }
  for (const branch of plan.branches) {
    const { branch: created } = await repository.createBranch({ projectId, title: branch.title, note: `Imported from memory-tree branch ${branch.referenceId}.`, sessionId, checkout: false, now: now() })
    for (const event of branch.events) await repository.appendBranchEvent({ branchId: created.id, kind: event.role, text: event.text, sessionId, now: now() })
    if (!branch.open) {
      const latest = (await repository.getBranch(created.id))!
      // The reference appended the conclusions to the state file already: no items here.
      await repository.closeBranch({ branchId: created.id, expectedBranchRevision: latest.revision, status: 'merged', conclusion: branch.conclusion, items: [], sessionId, now: now() })
    }
  }
  for (const turn of plan.turns) {
    if (turn.role === 'note') continue
    await repository.appendTurn({ projectId, sessionId, role: turn.role, text: clip(turn.text, tree.options.maxTurnChars), keep: tree.options.maxStoredTurns, now: now() })
  }
  for (const message of plan.chat) {
    await repository.appendChat(
      { workspace, sessionId, role: message.role === 'assistant' ? 'assistant' : 'user', text: clip(message.text, tree.options.maxTurnChars), now: now() },
      { keep: tree.options.chatKeep, summarize: summarizeChat },
    )
  }
}
