/**
 * The upgrade in place of a data dir written before recall had its own tables: session
 * modes (`recall.session.<id>`), the injection ledger (`recall.layers.<id>`) and the
 * lifecycle (`recall.lifecycle.*`) were versioned JSON in the store's meta table.
 *
 * At open, every such record is read, checked, written into the `recall_*` tables and its
 * meta key removed, all in one store transaction (two processes opening at once serialise;
 * the second finds nothing left). A record that cannot be read (another version, damaged
 * JSON, an unknown value) is left in the meta table untouched and reported with the field
 * that is wrong: nothing is lost, and the session it belonged to runs on the defaults. When a
 * table already holds a newer row (an older process kept writing the meta table after the
 * upgrade) the newer one wins and the stale key is removed.
 */
import { createHash } from 'node:crypto'
import type { MemoryStore, PackageTables } from '@dsh-memory/store'
import { errorMessage, RecallError } from './errors.ts'
import type { InjectionRecord, InjectionState, SessionLayerState } from './injection-ledger.ts'
import { INJECT_SWITCHES, MEMORY_MODES } from './session-modes.ts'
import {
  hasSchedule,
  type LayerSchedule,
  type RecallDatabase,
  readLayerState,
  readRetention,
  readSettings,
  readTurns,
  type TurnState,
  writeLayerState,
  writeRetention,
  writeSchedule,
  writeSettings,
  writeTurns,
} from './state-rows.ts'
import type { RecallSchema } from './state-schema.ts'

/** The meta-key prefixes of the old format. */
export const LEGACY_META_PREFIXES = Object.freeze({
  settings: 'recall.session.',
  ledger: 'recall.layers.',
  lifecycle: 'recall.lifecycle.',
})

/** What one upgrade did. */
export interface LegacyUpgradeReport {
  /** Records moved into the tables (or dropped as older than the row already there). */
  readonly moved: number
  /** Records that could not be read: left in the meta table under their key, with the reason. */
  readonly kept: readonly { readonly key: string; readonly reason: string }[]
}

/** What the upgrade needs of the store. */
export type LegacyStateHost = Pick<MemoryStore, 'meta' | 'transaction'>

/** Meta entries read per page (the store's most). */
const PAGE = 10_000

/**
 * Move every old-format record into recall's tables and remove its meta key; leave unreadable
 * ones where they are. Safe to run at every open: with nothing left it only lists three prefixes.
 * @throws MemoryStoreError from the store (`busy`, `readonly`, `closed`); nothing is changed then.
 */
export async function upgradeLegacyState(store: LegacyStateHost, tables: PackageTables<RecallSchema>): Promise<LegacyUpgradeReport> {
  const prefixes = Object.values(LEGACY_META_PREFIXES)
  // A plain read first: the write lock is taken only when there is something to move.
  const found = await Promise.all(prefixes.map((prefix) => store.meta.list(prefix, { limit: 1 })))
  if (found.every((entries) => entries.length === 0)) return { moved: 0, kept: [] }
  return store.transaction(async (tx) => {
    let moved = 0
    const kept: { key: string; reason: string }[] = []
    for (const prefix of prefixes) {
      const seen = new Set<string>()
      for (;;) {
        const page = await tx.meta.list(prefix, { limit: PAGE })
        const fresh = page.filter((entry) => !seen.has(entry.key))
        if (fresh.length === 0) break
        for (const entry of fresh) {
          seen.add(entry.key)
          try {
            const write = planMove(entry.key, entry.value)
            // Each record is its own savepoint in the store transaction: a row the tables refuse
            // (a broken invariant) leaves that record where it was, and the rest moves on.
            await tables.write(write, { audit: { op: 'recall.state.upgrade', entityId: entry.key }, actor: 'recall' })
            await tx.meta.delete(entry.key, { actor: 'recall' })
            moved++
          } catch (error) {
            kept.push({ key: entry.key, reason: errorMessage(error) })
          }
        }
        if (page.length < PAGE) break
      }
    }
    return { moved, kept }
  })
}

/**
 * Decode one old-format record and return the write that stores it (skipping it when the
 * table holds a newer row).
 * @throws RecallError `corrupt-state` naming the key and the bad field
 */
export function planMove(key: string, raw: string): (db: RecallDatabase, t: RecallSchema) => Promise<void> {
  const value = parseJson(key, raw)
  if (key.startsWith(LEGACY_META_PREFIXES.settings)) {
    const sessionId = key.slice(LEGACY_META_PREFIXES.settings.length)
    const settings = decodeSettings(key, value)
    return async (db, t) => {
      const current = await readSettings(db, t, sessionId)
      if (!current || (current.updatedAt ?? 0) < settings.updatedAt) await writeSettings(db, t, sessionId, settings)
    }
  }
  if (key.startsWith(LEGACY_META_PREFIXES.ledger)) {
    const state = parseLegacyLayerState(key, value)
    return async (db, t) => {
      if ((await readLayerState(db, t, state.sessionId)).updatedAt < state.updatedAt) await writeLayerState(db, t, state)
    }
  }
  if (key === `${LEGACY_META_PREFIXES.lifecycle}turns`) {
    const turns = decodeTurns(key, value)
    return async (db, t) => {
      if ((await readTurns(db, t)).lastTurnAt < turns.lastTurnAt) await writeTurns(db, t, turns)
    }
  }
  if (key === `${LEGACY_META_PREFIXES.lifecycle}retention`) {
    const lastSweepAt = number(key, value, 'lastSweepAt')
    return async (db, t) => {
      if (((await readRetention(db, t))?.lastSweepAt ?? -1) < lastSweepAt) await writeRetention(db, t, { lastSweepAt })
    }
  }
  if (key.startsWith(`${LEGACY_META_PREFIXES.lifecycle}layer.`)) {
    const schedule = decodeSchedule(key, value)
    return async (db, t) => {
      if (!(await hasSchedule(db, t, schedule.layerKey))) await writeSchedule(db, t, schedule)
    }
  }
  throw corrupt(key, 'key', 'is not a key recall ever wrote')
}

// ---------------------------------------------------------------------------------------------
// decoding, each failure naming the field

type Json = Record<string, unknown>

function corrupt(key: string, path: string, problem: string): RecallError {
  return new RecallError('corrupt-state', `${key}: ${path} ${problem}`, { path })
}

function parseJson(key: string, raw: string): Json {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (cause) {
    throw new RecallError('corrupt-state', `${key}: not JSON`, { cause })
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw corrupt(key, '(record)', 'is not an object')
  return value as Json
}

/** `value[field]` as a finite number; `at` prefixes the reported path (`injections[2].`). */
function number(key: string, value: Json, field: string, at = ''): number {
  const found = value[field]
  if (typeof found !== 'number' || !Number.isFinite(found)) throw corrupt(key, at + field, `is ${JSON.stringify(found)}, expected a number`)
  return found
}

function oneOf<T extends string>(key: string, value: unknown, path: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw corrupt(key, path, `is ${JSON.stringify(value)}, expected one of ${allowed.join(', ')}`)
  return value as T
}

function version(key: string, value: Json, path: string): void {
  if (value[path] !== 1) throw corrupt(key, path, `is ${JSON.stringify(value[path])}, expected 1`)
}

function decodeSettings(key: string, value: Json) {
  version(key, value, 'version')
  return {
    mode: oneOf(key, value.mode, 'mode', MEMORY_MODES),
    inject: oneOf(key, value.inject, 'inject', INJECT_SWITCHES),
    updatedAt: number(key, value, 'updatedAt'),
  }
}

function decodeTurns(key: string, value: Json): TurnState {
  version(key, value, 'v')
  return { sinceReview: number(key, value, 'sinceReview'), total: number(key, value, 'total'), lastTurnAt: number(key, value, 'lastTurnAt'), lastReviewAt: number(key, value, 'lastReviewAt') }
}

function decodeSchedule(key: string, value: Json): LayerSchedule {
  version(key, value, 'v')
  if (typeof value.layerKey !== 'string' || value.layerKey.length === 0) throw corrupt(key, 'layerKey', 'is not a layer key')
  const dueAt = value.dueAt === null ? null : number(key, value, 'dueAt')
  return { layerKey: value.layerKey, consolidatedRevision: number(key, value, 'consolidatedRevision'), lastRunAt: number(key, value, 'lastRunAt'), dueAt }
}

const STATES: readonly InjectionState[] = ['desired', 'queued', 'committed', 'superseded', 'cancelled']

/** The old meta key of a session's layer state (long ids were hashed to stay under the key limit). */
export function legacyLedgerKey(sessionId: string): string {
  return LEGACY_META_PREFIXES.ledger + (sessionId.length <= 150 ? sessionId : createHash('sha256').update(sessionId).digest('hex'))
}

/**
 * Decode an old-format layer-state record (version 1).
 * @throws RecallError `corrupt-state` naming the key and the bad field
 */
export function parseLegacyLayerState(key: string, value: Json): SessionLayerState {
  version(key, value, 'v')
  const sessionId = value.sessionId
  if (typeof sessionId !== 'string' || legacyLedgerKey(sessionId) !== key) throw corrupt(key, 'sessionId', `is ${JSON.stringify(sessionId)}, which does not belong to this key`)
  const enabled = (value.enabled ?? {}) as Json
  for (const layer of ['global', 'workspace']) {
    if (typeof enabled[layer] !== 'boolean') throw corrupt(key, `enabled.${layer}`, `is ${JSON.stringify(enabled[layer])}, expected true or false`)
  }
  if (!Array.isArray(value.injections)) throw corrupt(key, 'injections', 'is not a list')
  const records = value.injections.map((item: unknown, index: number): InjectionRecord => {
    const at = `injections[${index}].`
    const record = (item ?? {}) as Json
    const nullable = (field: string) => (record[field] === null || record[field] === undefined ? null : number(key, record, field, at))
    const counter = (field: string) => (record[field] === undefined ? 0 : number(key, record, field, at))
    if (typeof record.id !== 'string' || record.id.length === 0) throw corrupt(key, `${at}id`, 'is not an id')
    if (typeof record.layerKey !== 'string') throw corrupt(key, `${at}layerKey`, 'is not a layer key')
    return {
      id: record.id,
      layer: oneOf(key, record.layer, `${at}layer`, ['global', 'workspace'] as const),
      layerKey: record.layerKey,
      revision: number(key, record, 'revision', at),
      generation: number(key, record, 'generation', at),
      state: oneOf(key, record.state, `${at}state`, STATES),
      desiredAt: number(key, record, 'desiredAt', at),
      queuedAt: nullable('queuedAt'),
      committedAt: nullable('committedAt'),
      seq: nullable('seq'),
      entries: counter('entries'),
      tokens: counter('tokens'),
    }
  })
  return { sessionId, enabled: { global: enabled.global as boolean, workspace: enabled.workspace as boolean }, injections: records, updatedAt: number(key, value, 'updatedAt') }
}
