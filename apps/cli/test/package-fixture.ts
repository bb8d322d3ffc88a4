/**
 * Rows in every plugin's package tables, written the way users and plugins write them: the
 * CLI's own imports (a cue-bank file, a memory-palace folder, a memory-tree root) and recall's
 * tables through its declaration. Works on a data dir or a PostgreSQL database alike (the CLI
 * arguments name the store).
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildTurns, PalaceWorkspace, planArchive, resolvePalaceOptions, type Turn } from '@dsh-memory/palace'
import { recallDeclaration } from '@dsh-memory/recall'
import type { MemoryStore } from '@dsh-memory/store'
import { cli } from './helpers.ts'

/** The reference memory-tree root of the tests (two projects, one of them Chinese). */
export const MEMORY_TREE_ROOT = fileURLToPath(new URL('./fixtures/memory-tree-root', import.meta.url))

/** A cue-bank export of the reference plugin: one Chinese topic, one idiom. */
export const CUE_BANK_FILE = {
  version: 1,
  userId: 'u-1',
  topics: [
    {
      id: 'topic-db',
      level: 'task',
      keywords: [{ word: 'postgresql', score: 1 }, { word: '主数据库', score: 0.8 }],
      summary: '讨论主数据库迁移到 PostgreSQL 16',
      createdAt: '2025-11-01T09:00:00.000Z',
    },
  ],
  idiosyncrasies: [{ word: '搞定', score: 0.6 }],
}

/**
 * Archive one session of `lines` (user, assistant, user, …) into `<workspace>/memory-palace`
 * under `namespace`, as the palace plugin does.
 * @returns the archived turns and the session id
 */
export async function writePalace(workspace: string, namespace: string, lines: readonly string[]): Promise<{ turns: Turn[]; sessionId: string }> {
  mkdirSync(workspace, { recursive: true })
  const palace = new PalaceWorkspace(workspace, resolvePalaceOptions({}), { now: () => new Date(Date.UTC(2025, 10, 30, 12)) })
  const sessionId = `session-${randomUUID()}`
  await palace.setNamespace(sessionId, namespace)
  let seq = 0
  const event = (type: string, data: unknown) => ({ type, seq: ++seq, time: Date.UTC(2025, 10, 30, 11) + seq * 1000, data, surfaceOp: { op: 'append' } })
  const events = lines.map((text, index) => {
    const id = `${index % 2 === 0 ? 'u' : 'a'}${index}`
    const content = [{ type: 'text', text }]
    return index % 2 === 0
      ? event('user/message', { id, role: 'user', content, source: { kind: 'user' } })
      : event('assistant/message', { turn: (index + 1) / 2, step: 1, message: { id, role: 'assistant', content, source: { kind: 'model' } } })
  })
  const turns = buildTurns(events as never, { includeReasoning: true })
  const plan = planArchive({ segments: [{ category: 'launch', fromTurn: turns[0]!.turn, toTurn: turns[turns.length - 1]!.turn }], summary: 'Launch facts.', selfName: 'assistant' }, turns, () => false, {
    maxFileBytes: 5_000_000,
  })
  await palace.archive(namespace, sessionId, plan)
  return { turns, sessionId }
}

/** Write one row into each of recall's tables (session modes, layers, ledger, lifecycle, schedules). */
export async function seedRecallTables(store: MemoryStore): Promise<void> {
  const tables = await store.tables(recallDeclaration())
  const { sessionSettings, layerSessions, injections, lifecycleCounters, layerSchedules } = tables.t
  const at = Date.UTC(2025, 10, 30, 12)
  await tables.write(async (db) => {
    await db.insert(sessionSettings).values({ sessionId: 's-1', mode: 'work', inject: 'on', updatedAt: at })
    await db.insert(layerSessions).values({ sessionId: 's-1', globalEnabled: true, workspaceEnabled: false, updatedAt: at, version: 2 })
    await db.insert(injections).values({ id: 'inj-1', sessionId: 's-1', position: 0, layer: 'global', layerKey: 'global', revision: 3, generation: 1, state: 'committed', desiredAt: at, queuedAt: at, committedAt: at, seq: 4, entries: 2, tokens: 120 })
    await db.insert(lifecycleCounters).values({ id: 1, turnsSinceReview: 3, turnsTotal: 9, lastTurnAt: at, lastReviewAt: at, lastSweepAt: null })
    await db.insert(layerSchedules).values({ layerKey: 'global', consolidatedRevision: 2, lastRunAt: at, dueAt: null })
  })
}

/**
 * Fill the package tables of the store `target` names (`['--data-dir', dir]` or
 * `['--database-url', url]`) through the CLI's imports; `dir` holds the files imported.
 * @returns the palace workspace
 */
export async function importPackageData(target: readonly string[], dir: string): Promise<{ workspace: string }> {
  mkdirSync(dir, { recursive: true })
  const cueFile = join(dir, 'cue-bank.json')
  writeFileSync(cueFile, JSON.stringify(CUE_BANK_FILE))
  const workspace = join(dir, 'palace-project')
  await writePalace(workspace, 'Project Alpha', ['The launch codename is 蓝鲸-Orion.', 'Noted the codename.', 'The rollback window is 42 minutes.', 'Rollback window noted.'])
  for (const args of [
    [cueFile, '--workspace', join(dir, 'cue-project')],
    [join(workspace, 'memory-palace')],
    [MEMORY_TREE_ROOT, '--workspace', join(dir, 'tree-project')],
  ]) {
    const result = await cli(['import', ...args, ...target, '--quiet'])
    if (result.code !== 0) throw new Error(`import ${args[0]} failed: ${result.stderr}`)
  }
  return { workspace }
}
