/**
 * In-place upgrade of a data dir written before the distill tables existed: the state kept as
 * JSON under `distill.` meta keys moves into the tables and the keys are removed, in one
 * store transaction (all or nothing; a value this code cannot read fails the upgrade loudly
 * and leaves every key where it was).
 *
 * The old ledger kept totals per day, provider, model and layer, never single calls, so its
 * buckets become `distill_carried_days` rows: the per-day totals and `costs()` include them,
 * the per-call list (`calls()`) does not invent calls that were never recorded one by one.
 *
 * SQLite history only: a PostgreSQL store never held distill state in its meta table, so the
 * repository does not call this there.
 */
import type { MemoryStore } from '@dsh-memory/store'
import { LEGACY_META_PREFIX, readLegacyState } from './legacy-state.js'
import { eq } from 'drizzle-orm'
import { markPending, SCAN_MARK, writeConversation, writeLayer } from './state-rows.js'
import type { DistillTables } from './tables.js'

/** What the upgrade moved. */
export interface UpgradeReport {
  readonly conversations: number
  readonly layers: number
  readonly days: number
  /** Meta keys removed. */
  readonly keys: number
}

/**
 * Move legacy meta state into the tables (a no-op, one short read, once nothing is left).
 * Call after the distill migrations are applied, on a writable store.
 * @throws DistillError `unsupported-state` naming the key (and field) this code cannot read
 */
export async function upgradeLegacyState(store: Pick<MemoryStore, 'meta' | 'transaction'>, tables: DistillTables): Promise<UpgradeReport> {
  const report = { conversations: 0, layers: 0, days: 0, keys: 0 }
  // Cheap check outside a transaction: no write lock is taken by every open of an upgraded dir.
  if ((await store.meta.list(LEGACY_META_PREFIX, { limit: 1 })).length === 0) return report
  await store.transaction(async (tx) => {
    // Pages of at most 10 000 keys: each page's keys are deleted before the next is read.
    for (;;) {
      const legacy = await readLegacyState(tx.meta)
      if (legacy.keys.length === 0) break
      await tables.write(async (db, t) => {
        const pending = new Set(legacy.pending)
        for (const state of legacy.conversations) {
          // A row the tables already hold (another process moved on) is newer than the legacy value.
          const [held] = await db.select({ id: t.conversations.conversationId }).from(t.conversations).where(eq(t.conversations.conversationId, state.conversationId)).limit(1)
          if (held) continue
          await writeConversation(db, t, state, pending.has(state.conversationId))
          for (const range of state.skipped) await db.insert(t.skipped).values({ conversationId: state.conversationId, ...range })
        }
        for (const id of pending) await markPending(db, t, id)
        for (const [key, state] of Object.entries(legacy.layers)) await writeLayer(db, t, key, state)
        for (const day of legacy.days) {
          for (const row of day.rows) await db.insert(t.carriedDays).values({ day: day.day, ...row }).onConflictDoNothing()
        }
        if (legacy.scanAt !== undefined) await db.insert(t.marks).values({ name: SCAN_MARK, at: legacy.scanAt }).onConflictDoNothing()
      })
      for (const key of legacy.keys) await tx.meta.delete(key, { actor: 'distill' })
      report.conversations += legacy.conversations.length
      report.layers += Object.keys(legacy.layers).length
      report.days += legacy.days.length
      report.keys += legacy.keys.length
    }
  })
  return report
}
