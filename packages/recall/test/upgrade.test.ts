import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { coordinatedStore, openMemoryStore } from '@dsh-memory/store'
import { afterEach, describe, expect, it } from 'vitest'
import { isRecallError } from '../src/core/errors.ts'
import { InjectionLedger } from '../src/core/injection-ledger-repository.ts'
import { snapshotInjectionId } from '../src/core/layers.ts'
import { legacyLedgerKey, planMove, upgradeLegacyState } from '../src/core/legacy-state.ts'
import { Lifecycle } from '../src/core/lifecycle.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { SessionSettingsRepository } from '../src/core/session-settings.ts'
import { recallSchema } from '../src/core/state-schema.ts'
import { openRecallTables, recallMigrations } from '../src/core/state-tables.ts'
import { startHost, type TestHost } from './support/host.ts'

/** When `fixtures/pre-tables-generate.mjs` wrote the fixture (its clock). */
const WRITTEN_AT = Date.UTC(2026, 10, 30, 12)
const LONG_SESSION = `长会话-${'x'.repeat(196)}`
const DEFAULTS = { mode: 'auto', inject: 'follow' } as const

/**
 * A data dir written by the code before recall had its own tables (session modes, the
 * injection ledger and the lifecycle as JSON in the store's meta table);
 * `fixtures/pre-tables-generate.mjs` wrote it with that code.
 */
function writeOldDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-recall-upgrade-'))
  writeFileSync(join(dir, 'memory.db'), gunzipSync(readFileSync(join(import.meta.dirname, 'fixtures', 'pre-tables-memory.db.gz'))))
  return dir
}

describe('a data dir written before recall had its own tables', () => {
  const dirs: string[] = []
  let host: TestHost | undefined
  afterEach(async () => {
    await host?.cleanup()
    host = undefined
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  const oldDir = () => {
    const dir = writeOldDataDir()
    dirs.push(dir)
    return dir
  }

  it('is upgraded in place at open: the meta JSON moves into the tables, its keys are removed, unreadable records stay', async () => {
    const store = coordinatedStore(openMemoryStore({ path: join(oldDir(), 'memory.db') }))
    try {
      const warnings: string[] = []
      await openRecallTables(store, { onWarning: (message) => warnings.push(message) })

      const settings = new SessionSettingsRepository(store, DEFAULTS)
      expect(await settings.get('s1')).toEqual({ mode: 'work', inject: 'follow', updatedAt: WRITTEN_AT })
      expect(await settings.get('会话-二')).toEqual({ mode: 'chat', inject: 'off', updatedAt: WRITTEN_AT })
      expect(await settings.get('future')).toEqual({ ...DEFAULTS, updatedAt: null })

      const ledger = new InjectionLedger(() => store)
      const s1 = await ledger.get('s1')
      expect(s1.enabled).toEqual({ global: true, workspace: true })
      expect(s1.injections.map((record) => [record.id, record.layer, record.state, record.seq, record.entries, record.tokens])).toEqual([
        [snapshotInjectionId('s1', 'global', 1, 0), 'global', 'committed', 7, 1, 12],
        [snapshotInjectionId('s1', 'workspace:/work/app', 1, 0), 'workspace', 'queued', null, 1, 15],
      ])
      // The long session id was hashed in its meta key; the table keys it by the id itself.
      const long = await ledger.get(LONG_SESSION)
      expect(long.injections.map((record) => [record.id, record.state])).toEqual([[snapshotInjectionId(LONG_SESSION, 'global', 1, 0), 'desired']])
      expect((await ledger.sessions()).map((state) => state.sessionId).sort()).toEqual(['s1', LONG_SESSION].sort())

      const lifecycle = new Lifecycle({ store: () => store, options: resolveRecallOptions({}), holder: 'upgrade-test' })
      expect(await lifecycle.turns()).toEqual({ sinceReview: 3, total: 3, lastTurnAt: WRITTEN_AT, lastReviewAt: 0 })
      expect(await lifecycle.schedule('global')).toEqual({ layerKey: 'global', consolidatedRevision: 1, lastRunAt: WRITTEN_AT, dueAt: null })
      expect(await lifecycle.schedule('workspace:/work/app')).toEqual({ layerKey: 'workspace:/work/app', consolidatedRevision: 0, lastRunAt: 0, dueAt: WRITTEN_AT + 6 * 3_600_000 })

      // Only the two unreadable records are left in the meta table, byte for byte; each is named with the field that is wrong.
      expect((await store.meta.list('recall.')).map((entry) => [entry.key, entry.value])).toEqual([
        ['recall.layers.damaged', '{not json'],
        ['recall.session.future', JSON.stringify({ version: 99, mode: 'telepathy', inject: 'on', updatedAt: WRITTEN_AT })],
      ])
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('recall.layers.damaged (recall.layers.damaged: not JSON)')
      expect(warnings[0]).toContain('recall.session.future (recall.session.future: version is 99, expected 1)')
      // Audited as moves, one per record.
      expect((await store.audit.list({ entity: 'recall' as never, limit: 100 })).filter((entry) => String(entry.op) === 'recall.state.upgrade')).toHaveLength(8)
    } finally {
      await store.close()
    }
  })

  it('moves each record once when two processes open the old dir at the same time', async () => {
    const path = join(oldDir(), 'memory.db')
    const first = coordinatedStore(openMemoryStore({ path }))
    const second = coordinatedStore(openMemoryStore({ path }))
    try {
      const upgrade = async (store: typeof first) => upgradeLegacyState(store, await store.tables({ migrations: recallMigrations(), schema: recallSchema }))
      const [a, b] = await Promise.all([upgrade(first), upgrade(second)])
      expect(a!.moved + b!.moved).toBe(8)
      // Both see the unreadable ones, which stay.
      for (const report of [a!, b!]) expect(report.kept.map((entry) => entry.key)).toEqual(['recall.session.future', 'recall.layers.damaged'])
      // Opening again finds nothing new to move.
      expect((await upgradeLegacyState(first, await openRecallTables(first))).moved).toBe(0)
      expect((await new InjectionLedger(() => second).get('s1')).injections).toHaveLength(2)
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('runs in the real plugin: a resumed session keeps its mode and its enabled layers', async () => {
    const dataDir = oldDir()
    host = await startHost({ dataDir })
    const agent = await host.createAgent('/work/app', 's1')
    const status = (await host.command(agent, '/memory status'))?.text ?? ''
    expect(status).toContain('(mode work, inject follow)')
    expect(status).toMatch(/Layers: explicit — global, workspace enabled/)
    const chat = await host.createAgent('/work/app', '会话-二')
    expect((await host.command(chat, '/memory status'))?.text).toContain('(mode chat, inject off)')
  })

  it('a table row newer than an old-format record wins; the stale key is removed', async () => {
    const store = coordinatedStore(openMemoryStore({ path: join(oldDir(), 'memory.db') }))
    try {
      // The row a newer process wrote after another open already moved everything, then an
      // older process wrote the meta key again.
      await new SessionSettingsRepository(store, DEFAULTS, () => WRITTEN_AT + 10).update('s1', { mode: 'off' })
      await store.meta.set('recall.session.s1', JSON.stringify({ version: 1, mode: 'chat', inject: 'on', updatedAt: WRITTEN_AT + 5 }))
      expect((await upgradeLegacyState(store, await openRecallTables(store))).moved).toBe(1)
      expect(await new SessionSettingsRepository(store, DEFAULTS).get('s1')).toEqual({ mode: 'off', inject: 'follow', updatedAt: WRITTEN_AT + 10 })
      expect(await store.meta.get('recall.session.s1')).toBeUndefined()
    } finally {
      await store.close()
    }
  })
})

describe('old-format records that cannot be read', () => {
  const reason = (key: string, raw: unknown) => {
    try {
      planMove(key, typeof raw === 'string' ? raw : JSON.stringify(raw))
      return 'accepted'
    } catch (error) {
      expect(isRecallError(error, 'corrupt-state')).toBe(true)
      return `${(error as { path?: string }).path} | ${(error as Error).message}`
    }
  }
  const record = { id: 'memory-layer-a', layer: 'global', layerKey: 'global', revision: 1, generation: 0, state: 'queued', desiredAt: 1, queuedAt: 2, committedAt: null, seq: null, entries: 0, tokens: 0 }
  const layerState = (change: object) => ({ v: 1, sessionId: 's', enabled: { global: true, workspace: false }, injections: [record], updatedAt: 3, ...change })

  it('are refused naming the bad field', () => {
    expect(reason('recall.session.s', { version: 1, mode: 'loud', inject: 'on', updatedAt: 1 })).toBe('mode | recall.session.s: mode is "loud", expected one of auto, chat, work, off')
    expect(reason('recall.session.s', '{nope')).toBe('undefined | recall.session.s: not JSON')
    expect(reason('recall.layers.s', layerState({ v: 2 }))).toBe('v | recall.layers.s: v is 2, expected 1')
    expect(reason('recall.layers.s', layerState({ sessionId: 'other' }))).toMatch(/^sessionId \| /)
    expect(reason('recall.layers.s', layerState({ injections: [record, { ...record, id: 'memory-layer-b', state: 'landed' }] }))).toBe(
      'injections[1].state | recall.layers.s: injections[1].state is "landed", expected one of desired, queued, committed, superseded, cancelled',
    )
    expect(reason('recall.layers.s', layerState({ injections: [{ ...record, revision: '1' }] }))).toBe('injections[0].revision | recall.layers.s: injections[0].revision is "1", expected a number')
    expect(reason('recall.lifecycle.turns', { v: 1, sinceReview: 1, total: 1, lastTurnAt: 'yesterday', lastReviewAt: 0 })).toMatch(/^lastTurnAt \| /)
    expect(reason('recall.lifecycle.other', { v: 1 })).toMatch(/^key \| /)
    expect(reason('recall.layers.s', layerState({}))).toBe('accepted')
  })

  it('of a long session id were keyed by its digest', () => {
    expect(legacyLedgerKey('x'.repeat(300))).toMatch(/^recall\.layers\.[0-9a-f]{64}$/)
    expect(legacyLedgerKey('会话')).toBe('recall.layers.会话')
  })
})
