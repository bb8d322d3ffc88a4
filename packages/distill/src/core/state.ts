/**
 * Persistent distill state in the package's own tables (tables.ts, `migrations/distill/`),
 * declared through the store's package-table seam: every query runs on the store's session,
 * so a write made inside `store.transaction(...)` joins it. That is what keeps a slice's
 * cursor advance in the SAME transaction as the memories distilled from it: a crash can
 * neither lose a slice nor distill it twice.
 *
 * The repository opens its tables lazily (the constructor stays synchronous for readers such
 * as the memory browser and `dsh-memory status`). The first use on a writable store applies
 * the migrations and moves state an older version left in the meta table into the tables
 * (upgrade.ts). A read-only store whose migrations were never applied (a data dir not opened
 * writable since the update) is served from the legacy meta keys, read-only.
 */
import { isMemoryStoreError, type MemoryStore } from '@dsh-memory/store'
import { DISTILL_WORKSPACE_KEYS } from './workspace-keys.js'
import { and, asc, desc, eq, gte, inArray, lt, lte, notInArray, type SQL, sql } from 'drizzle-orm'
import { addRows, dayKey, oldestKeptDay, type LedgerCall, type LedgerCallFilter, type LedgerDay, type LedgerFilter, type LedgerRow, summarizeLedger } from './ledger.js'
import { DistillError } from './errors.js'
import { readLegacyState, type LegacySnapshot } from './legacy-state.js'
import type { LedgerEntry } from './model.js'
import { type ConversationState, initialConversationState, initialLayerState, type LayerState, MAX_SKIPPED, STATE_VERSION } from './state-types.js'
import { type DistillDb, distillDeclaration, type DistillSchema, type DistillTables } from './tables.js'
import { markPending, readConversation, SCAN_MARK, toConversation, toLayer, writeConversation, writeLayer } from './state-rows.js'
import { upgradeLegacyState } from './upgrade.js'

export { initialConversationState, initialLayerState, MAX_SKIPPED, STATE_VERSION } from './state-types.js'
export type { ConversationState, LayerState, Lease, SkippedRange } from './state-types.js'

/** The part of the store the state repository needs. */
export type StateStore = Pick<MemoryStore, 'meta' | 'transaction' | 'tables' | 'readonly'>

/** What a conversation write may change (the skipped ranges have their own method). */
export type ConversationPatch = Partial<Omit<ConversationState, 'v' | 'conversationId' | 'lease' | 'skipped'>>

/** Most ids one `IN (...)` list binds (SQLite's variable limit is 32 766). */
const CHUNK = 500

/** A `sum(...)` read as a JS number (PostgreSQL returns bigint and numeric sums as strings). */
const total = (expression: SQL) => expression.mapWith(Number)

/** Per-day totals of the call rows (and carried-over days) within `filter`'s days, oldest first. */
async function readDays(db: DistillDb, { calls, carriedDays }: DistillSchema, filter: LedgerFilter = {}): Promise<LedgerDay[]> {
  const byDay = new Map<string, LedgerRow[]>()
  const add = (day: string, row: LedgerRow) => {
    const rows = byDay.get(day) ?? []
    const same = rows.findIndex((other) => other.provider === row.provider && other.model === row.model && other.layer === row.layer)
    if (same < 0) rows.push(row)
    else rows[same] = addRows(rows[same]!, row)
    byDay.set(day, rows)
  }
  const dayRange = (column: typeof calls.day | typeof carriedDays.day) =>
    and(filter.fromDay ? gte(column, filter.fromDay) : undefined, filter.toDay ? lte(column, filter.toDay) : undefined)
  const perDay = await db
    .select({
      day: calls.day,
      provider: calls.provider,
      model: calls.model,
      layer: calls.layer,
      calls: total(sql`sum(case when ${calls.outcome} = 'ok' then 1 else 0 end)`),
      failures: total(sql`sum(case when ${calls.outcome} = 'failed' then 1 else 0 end)`),
      inputTokens: total(sql`sum(${calls.inputTokens})`),
      outputTokens: total(sql`sum(${calls.outputTokens})`),
      cacheReadTokens: total(sql`sum(${calls.cacheReadTokens})`),
      estimatedCalls: total(sql`sum(case when ${calls.outcome} = 'ok' and ${calls.estimated} then 1 else 0 end)`),
    })
    .from(calls)
    .where(dayRange(calls.day))
    .groupBy(calls.day, calls.provider, calls.model, calls.layer)
  for (const { day, ...row } of await db.select().from(carriedDays).where(dayRange(carriedDays.day))) add(day, row)
  for (const { day, ...row } of perDay) add(day, row)
  return [...byDay.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([day, rows]) => ({ v: 1, day, rows }))
}

/** Every layer row, by scope key. */
async function readLayers(db: DistillDb, t: DistillSchema): Promise<Record<string, LayerState>> {
  return Object.fromEntries((await db.select().from(t.layers)).map((row) => [row.scopeKey, toLayer(row)]))
}

/** Drop ledger days before the retention window. @returns the days removed. */
async function pruneDays(db: DistillDb, { calls, carriedDays }: DistillSchema, retentionDays: number, now: number): Promise<string[]> {
  const oldest = oldestKeptDay(now, retentionDays)
  if (oldest === undefined) return []
  const gone = new Set<string>()
  for (const { day } of await db.selectDistinct({ day: calls.day }).from(calls).where(lt(calls.day, oldest))) gone.add(day)
  for (const { day } of await db.selectDistinct({ day: carriedDays.day }).from(carriedDays).where(lt(carriedDays.day, oldest))) gone.add(day)
  if (gone.size === 0) return []
  await db.delete(calls).where(lt(calls.day, oldest))
  await db.delete(carriedDays).where(lt(carriedDays.day, oldest))
  return [...gone].sort()
}

/**
 * Repository of the distill state. Every method runs as one unit on the store's session; called
 * inside `store.transaction(...)` it joins that transaction (and rolls back with it).
 */
export class DistillStateRepository {
  #opened: Promise<DistillTables | LegacySnapshot> | undefined

  constructor(private readonly store: StateStore) {}

  /** The tables (migrated and upgraded once), or the legacy snapshot of a read-only, not yet upgraded store. */
  #open(): Promise<DistillTables | LegacySnapshot> {
    this.#opened ??= (async () => {
      try {
        const tables = await this.store.tables({ ...distillDeclaration(), workspaceKeys: DISTILL_WORKSPACE_KEYS })
        // Legacy meta state is SQLite history: a PostgreSQL store never had it.
        if (!this.store.readonly && tables.dialect === 'sqlite') await upgradeLegacyState(this.store, tables)
        return tables
      } catch (error) {
        if (this.store.readonly && isMemoryStoreError(error, 'schema-too-old')) return readLegacyState(this.store.meta)
        throw error
      }
    })()
    // A failed open (bad legacy data, a busy store) is tried again by the next call.
    this.#opened.catch(() => (this.#opened = undefined))
    return this.#opened
  }

  async #read<T>(op: (db: DistillDb, t: DistillSchema) => Promise<T>, legacy: (snapshot: LegacySnapshot) => T): Promise<T> {
    const opened = await this.#open()
    return 'read' in opened ? opened.read(op) : legacy(opened)
  }

  async #write<T>(op: (db: DistillDb, t: DistillSchema) => Promise<T>): Promise<T> {
    const opened = await this.#open()
    if (!('write' in opened)) throw new DistillError('unsupported-state', 'the distill tables are not migrated yet and the store is read-only: open the data dir once read-write')
    return opened.write(op, { actor: 'distill' })
  }

  /** Open the tables now (apply the migrations, upgrade legacy state); later calls are free. */
  async ready(): Promise<void> {
    await this.#open()
  }

  /** A conversation's state (fresh when never seen). */
  conversation(conversationId: string): Promise<ConversationState> {
    return this.#read(
      (db, t) => readConversation(db, t, conversationId),
      (snapshot) => snapshot.conversations.find((state) => state.conversationId === conversationId) ?? initialConversationState(conversationId),
    )
  }

  /** Every conversation the distiller keeps state for, in id order (for status readers). */
  conversations(): Promise<ConversationState[]> {
    return this.#read(
      async (db, { conversations, skipped }) => {
        const ranges = new Map<string, ConversationState['skipped'][number][]>()
        for (const { conversationId, ...range } of await db.select().from(skipped).orderBy(asc(skipped.id))) {
          ranges.set(conversationId, [...(ranges.get(conversationId) ?? []), { fromSeq: range.fromSeq, toSeq: range.toSeq, at: range.at, reason: range.reason }])
        }
        const rows = await db.select().from(conversations).orderBy(asc(conversations.conversationId))
        return rows.map((row) => toConversation(row, ranges.get(row.conversationId) ?? []))
      },
      (snapshot) => [...snapshot.conversations].sort((a, b) => a.conversationId.localeCompare(b.conversationId)),
    )
  }

  /** Write a conversation's state (its skipped ranges are not touched: see {@link addSkipped}). */
  async putConversation(state: Omit<ConversationState, 'skipped' | 'v'> & Partial<Pick<ConversationState, 'skipped' | 'v'>>): Promise<void> {
    await this.#write((db, t) => writeConversation(db, t, state))
  }

  /** Record a given-up range of a conversation; only the newest {@link MAX_SKIPPED} are kept. */
  async addSkipped(conversationId: string, range: ConversationState['skipped'][number]): Promise<void> {
    await this.#write(async (db, { skipped }) => {
      await db.insert(skipped).values({ conversationId, ...range })
      const keep = await db
        .select({ id: skipped.id })
        .from(skipped)
        .where(eq(skipped.conversationId, conversationId))
        .orderBy(desc(skipped.id))
        .limit(MAX_SKIPPED)
      await db.delete(skipped).where(
        and(
          eq(skipped.conversationId, conversationId),
          notInArray(
            skipped.id,
            keep.map((row) => row.id),
          ),
        ),
      )
    })
  }

  /**
   * Take the lease of a conversation unless another live distiller holds it.
   * @param isAlive - whether a foreign lease owner still runs (a dead owner's lease is taken over at once).
   * @returns the state under the new lease, or undefined when someone else holds it.
   */
  claim(conversationId: string, owner: string, now: number, leaseMs: number, isAlive: (owner: string) => boolean): Promise<ConversationState | undefined> {
    // One write unit: the read and the upsert hold the writer lock together, so of two
    // processes (on one SQLite file or one PostgreSQL database) exactly one gets the lease.
    return this.#write(async (db, t) => {
      const state = await readConversation(db, t, conversationId)
      const lease = state.lease
      if (lease && lease.owner !== owner && lease.until > now && isAlive(lease.owner)) return undefined
      const next: ConversationState = { ...state, lease: { owner, until: now + leaseMs } }
      await writeConversation(db, t, next)
      return next
    })
  }

  /** Update a conversation's state under its lease (drops the lease); no-op when someone else owns it now. */
  release(conversationId: string, owner: string, patch: ConversationPatch = {}): Promise<ConversationState | undefined> {
    return this.#write(async (db, t) => {
      const state = await readConversation(db, t, conversationId)
      if (state.lease && state.lease.owner !== owner) return undefined
      const next: ConversationState = { ...state, ...patch, lease: null }
      await writeConversation(db, t, next)
      return next
    })
  }

  /** Conversations that may have undistilled messages. */
  pendingIds(): Promise<string[]> {
    return this.#read(
      async (db, { conversations }) => (await db.select({ id: conversations.conversationId }).from(conversations).where(eq(conversations.pending, true))).map((row) => row.id),
      (snapshot) => [...snapshot.pending],
    )
  }

  /** Add or remove conversations from the pending index. */
  async updatePending(add: readonly string[], remove: readonly string[]): Promise<void> {
    if (add.length === 0 && remove.length === 0) return
    await this.#write(async (db, t) => {
      for (const id of add) await markPending(db, t, id)
      for (let start = 0; start < remove.length; start += CHUNK) {
        await db
          .update(t.conversations)
          .set({ pending: false })
          .where(inArray(t.conversations.conversationId, remove.slice(start, start + CHUNK)))
      }
    })
  }

  /** When the last start-up scan of conversations began, if ever. */
  lastScan(): Promise<number | undefined> {
    return this.#read(
      async (db, { marks }) => (await db.select().from(marks).where(eq(marks.name, SCAN_MARK)).limit(1))[0]?.at,
      (snapshot) => snapshot.scanAt,
    )
  }

  /** Record the start time of a completed scan. */
  async markScan(at: number): Promise<void> {
    await this.#write(async (db, { marks }) => {
      await db.insert(marks).values({ name: SCAN_MARK, at }).onConflictDoUpdate({ target: marks.name, set: { at } })
    })
  }

  /** All layer counters. */
  layers(): Promise<Record<string, LayerState>> {
    return this.#read(
      (db, t) => readLayers(db, t),
      (snapshot) => ({ ...snapshot.layers }),
    )
  }

  /** Read-modify-write the layer counters as one unit (joins the caller's transaction). */
  updateLayers(update: (keys: Record<string, LayerState>) => void): Promise<Record<string, LayerState>> {
    return this.#write(async (db, t) => {
      const before = await readLayers(db, t)
      const keys = { ...before }
      update(keys)
      const removed = Object.keys(before).filter((key) => !(key in keys))
      if (removed.length > 0) await db.delete(t.layers).where(inArray(t.layers.scopeKey, removed))
      for (const [key, state] of Object.entries(keys)) if (before[key] !== state) await writeLayer(db, t, key, state)
      return keys
    })
  }

  /** Conversation ids with state whose conversation is gone (`exists` says which still are). */
  async orphanConversations(exists: (conversationId: string) => Promise<boolean>): Promise<string[]> {
    const out: string[] = []
    for (const state of await this.conversations()) if (!(await exists(state.conversationId))) out.push(state.conversationId)
    return out
  }

  /** Forget the state of conversations (their skipped ranges included). @returns rows removed. */
  forgetConversations(ids: readonly string[]): Promise<number> {
    return this.#write(async (db, { conversations, skipped }) => {
      let removed = 0
      for (let start = 0; start < ids.length; start += CHUNK) {
        const chunk = ids.slice(start, start + CHUNK)
        await db.delete(skipped).where(inArray(skipped.conversationId, chunk))
        removed += (await db.delete(conversations).where(inArray(conversations.conversationId, chunk)).returning({ id: conversations.conversationId })).length
      }
      return removed
    })
  }

  /** Add one ledger row (one model call) and drop days out of retention. */
  async recordCost(entry: LedgerEntry, retentionDays: number, now: number): Promise<void> {
    await this.#write(async (db, t) => {
      await db.insert(t.calls).values({
          at: entry.at,
          day: dayKey(entry.at),
          layer: entry.layer,
          provider: entry.provider,
          model: entry.model,
          outcome: entry.ok ? 'ok' : 'failed',
          inputTokens: entry.inputTokens,
          outputTokens: entry.outputTokens,
          cacheReadTokens: entry.cacheReadTokens,
          estimated: entry.estimated,
          durationMs: entry.durationMs ?? null,
        conversationId: entry.conversationId ?? null,
      })
      await pruneDays(db, t, retentionDays, now)
    })
  }

  /** Drop ledger days out of retention. @returns the days removed. */
  pruneCosts(retentionDays: number, now: number): Promise<string[]> {
    return this.#write((db, t) => pruneDays(db, t, retentionDays, now))
  }

  /** The ledger's per-day totals (per provider, model and layer), oldest first. */
  costDays(filter: Pick<LedgerFilter, 'fromDay' | 'toDay'> = {}): Promise<LedgerDay[]> {
    return this.#read(
      (db, t) => readDays(db, t, filter),
      (snapshot) => snapshot.days.filter((day) => (!filter.fromDay || day.day >= filter.fromDay) && (!filter.toDay || day.day <= filter.toDay)),
    )
  }

  /** Ledger totals per (provider, model, layer). */
  async costs(filter: LedgerFilter = {}): Promise<LedgerRow[]> {
    return summarizeLedger(await this.costDays(filter), filter)
  }

  /** The ledger's single calls, newest first (carried-over day totals are not calls). */
  calls(filter: LedgerCallFilter = {}): Promise<LedgerCall[]> {
    return this.#read(
      async (db, { calls }) => {
        const rows = await db
          .select()
          .from(calls)
          .where(and(filter.since !== undefined ? gte(calls.at, filter.since) : undefined, filter.layer ? eq(calls.layer, filter.layer) : undefined))
          .orderBy(desc(calls.at), desc(calls.id))
          .limit(Math.min(Math.max(1, filter.limit ?? 1_000), 100_000))
        return rows.map(({ day: _day, ...row }) => row)
      },
      () => [],
    )
  }
}
