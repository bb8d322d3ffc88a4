/**
 * Coordination between processes on one SQLite database: layer revisions (bumped by the
 * session inside every write that changes a layer) and fenced single-writer leases.
 */
import { eq, inArray } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { heldBy, leaseHolder, leaseTtl, planAcquire } from './lease-rules.ts'
import { layerRevisionOf, layerRevisionsOf, storedLayerKeys } from './layers.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import type { AcquireLeaseOptions, LayerKey, LayerRepository, Lease, LeaseRepository } from './types-coordination.ts'
import type { LeaseFence } from './types-common.ts'

export function layerRepository(s: SqliteSession): LayerRepository {
  const t = schema.layerRevisions
  return {
    revision: async (key: LayerKey) => {
      const keys = storedLayerKeys(key, s.options.limits.label, s.options.user)
      return s.read(() => layerRevisionOf(keys, s.db.select().from(t).where(inArray(t.layerKey, keys)).all()))
    },
    list: async () => s.read(() => layerRevisionsOf(s.db.select().from(t).all(), s.options.user)),
  }
}

export function leaseRepository(s: SqliteSession): LeaseRepository {
  const t = schema.leases
  const getRow = (name: string) => s.db.select().from(t).where(eq(t.name, name)).get()
  const toLease = (row: typeof t.$inferSelect): Lease => ({ ...row })
  return {
    acquire: async (nameInput: string, holderInput: string, ttlInput: number, options?: AcquireLeaseOptions) => {
      const name = s.leaseName(nameInput)
      const holder = leaseHolder(holderInput)
      const ttlMs = leaseTtl(ttlInput)
      const isHolderStale = options?.isHolderStale
      return s.write(() => {
        const now = s.now()
        const plan = planAcquire(getRow(name), holder, now, isHolderStale)
        if (plan.kind === 'refuse') return undefined
        if (plan.kind === 'renew') {
          // Re-acquiring a live lease of one's own is a renewal: same token.
          s.db.update(t).set({ expiresAt: now + ttlMs }).where(eq(t.name, name)).run()
          return toLease(getRow(name)!)
        }
        const { token, takeover } = plan
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
      const holder = leaseHolder(lease?.holder)
      const ttlMs = leaseTtl(ttlInput)
      return s.write(() => {
        if (!heldBy(getRow(fence.name), fence, holder)) {
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
      const holder = leaseHolder(lease?.holder)
      return s.write(() => {
        if (!heldBy(getRow(fence.name), fence, holder)) return false
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
