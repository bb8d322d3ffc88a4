/**
 * Coordination between processes on one SQLite database: layer revisions (bumped by the
 * session inside every write that changes a layer) and fenced single-writer leases.
 */
import { asc, eq, sql } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { layerKeyOf, parseLayerKey } from './layers.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { prepareLabel } from './text.ts'
import type { AcquireLeaseOptions, LayerKey, LayerRepository, LayerRevision, Lease, LeaseRepository } from './types-coordination.ts'
import type { LeaseFence } from './types-common.ts'
import { requireId } from './validate.ts'

const MAX_LEASE_HOLDER = 200
/** A lease longer than a day is a lock nobody can recover from a crash; refuse it. */
const MAX_LEASE_TTL_MS = 86_400_000

export function layerRepository(s: SqliteSession): LayerRepository {
  const t = schema.layerRevisions
  const toRevision = (key: string, row: { revision: number; updatedAt: number } | undefined): LayerRevision => {
    const layer = parseLayerKey(key)!
    return { scope: layer.scope, workspace: layer.workspace, key, revision: row?.revision ?? 0, updatedAt: row?.updatedAt ?? 0 }
  }
  return {
    revision: async (key: LayerKey) => {
      layerKeyOf(key)
      // The same normalisation as the rows' workspace column, so the keys agree.
      const resolved = key.scope === 'global' ? 'global' : layerKeyOf({ scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', s.options.limits.label) })
      return s.read(() => toRevision(resolved, s.db.select().from(t).where(eq(t.layerKey, resolved)).get()))
    },
    list: async () =>
      s.read(() =>
        s.db
          .select()
          .from(t)
          .orderBy(sql`${t.layerKey} <> 'global'`, asc(t.layerKey))
          .all()
          .filter((row) => parseLayerKey(row.layerKey) !== undefined)
          .map((row) => toRevision(row.layerKey, row)),
      ),
  }
}

export function leaseRepository(s: SqliteSession): LeaseRepository {
  const t = schema.leases
  const holderOf = (value: unknown): string => {
    const holder = requireId(value, 'holder')
    if (holder.length > MAX_LEASE_HOLDER) throw new MemoryStoreError('invalid-argument', `holder must be at most ${MAX_LEASE_HOLDER} characters`)
    return holder
  }
  const ttlOf = (value: unknown): number => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_LEASE_TTL_MS) {
      throw new MemoryStoreError('invalid-argument', `ttlMs must be an integer between 1 and ${MAX_LEASE_TTL_MS}`)
    }
    return value
  }
  const getRow = (name: string) => s.db.select().from(t).where(eq(t.name, name)).get()
  const toLease = (row: typeof t.$inferSelect): Lease => ({ ...row })
  return {
    acquire: async (nameInput: string, holderInput: string, ttlInput: number, options?: AcquireLeaseOptions) => {
      const name = s.leaseName(nameInput)
      const holder = holderOf(holderInput)
      const ttlMs = ttlOf(ttlInput)
      const isHolderStale = options?.isHolderStale
      return s.write(() => {
        const now = s.now()
        const row = getRow(name)
        if (row && row.holder === holder && row.expiresAt > now) {
          // Re-acquiring a live lease of one's own is a renewal: same token.
          s.db.update(t).set({ expiresAt: now + ttlMs }).where(eq(t.name, name)).run()
          return toLease(getRow(name)!)
        }
        if (row && row.expiresAt > now) {
          let stale = false
          try {
            stale = isHolderStale?.(row.holder) === true
          } catch {
            stale = false
          }
          if (!stale) return undefined
        }
        const token = (row?.token ?? 0) + 1
        const takeover = row !== undefined && row.expiresAt > 0
        s.db
          .insert(t)
          .values({ name, holder, token, acquiredAt: now, expiresAt: now + ttlMs })
          .onConflictDoUpdate({ target: t.name, set: { holder, token, acquiredAt: now, expiresAt: now + ttlMs } })
          .run()
        s.audit({ entity: 'lease', entityId: name, audit: takeover ? 'lease.takeover' : 'lease.acquire', revision: token }, options, now)
        return toLease(getRow(name)!)
      }, options)
    },
    renew: async (lease, ttlInput, options) => {
      const fence = s.fenceOf(lease)
      const holder = holderOf(lease?.holder)
      const ttlMs = ttlOf(ttlInput)
      return s.write(() => {
        const row = getRow(fence.name)
        if (!row || row.token !== fence.token || row.holder !== holder || row.expiresAt === 0) {
          s.assertFence(fence)
          throw new MemoryStoreError('fenced', `lease ${fence.name} is not held by ${holder}`)
        }
        // An expired lease nobody took over still carries this token: renewing it is safe.
        s.db.update(t).set({ expiresAt: s.now() + ttlMs }).where(eq(t.name, fence.name)).run()
        return toLease(getRow(fence.name)!)
      }, options)
    },
    release: async (lease, options) => {
      const fence = s.fenceOf(lease)
      const holder = holderOf(lease?.holder)
      return s.write(() => {
        const row = getRow(fence.name)
        if (!row || row.token !== fence.token || row.holder !== holder || row.expiresAt === 0) return false
        const now = s.now()
        // The row stays (expires_at 0) so the next holder's token is still larger.
        s.db.update(t).set({ expiresAt: 0 }).where(eq(t.name, fence.name)).run()
        s.audit({ entity: 'lease', entityId: fence.name, audit: 'lease.release', revision: fence.token }, options, now)
        return true
      }, options)
    },
    get: async (nameInput: string) => {
      const name = s.leaseName(nameInput)
      return s.read(() => {
        const row = getRow(name)
        return row ? toLease(row) : undefined
      })
    },
    check: async (fenceInput: LeaseFence) => {
      const fence = s.fenceOf(fenceInput)
      return s.read(() => s.assertFence(fence))
    },
  }
}
