/**
 * Coordination between processes (on any machines) on one PostgreSQL store: layer revisions
 * (bumped by the session inside every write that changes a layer) and fenced single-writer
 * leases. The rules are `lease-rules.ts`'s, shared with SQLite; every write runs under the
 * schema's writer lock (`pg-session.ts`), so read-then-write is race-free across processes.
 */
import { MemoryStoreError } from './errors.ts'
import { heldBy, leaseHolder, leaseTtl, planAcquire } from './lease-rules.ts'
import { layerRevisionOf, layerRevisionsOf, storedLayerKeys } from './layers.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import type { AcquireLeaseOptions, LayerKey, LayerRepository, Lease, LeaseRepository } from './types-coordination.ts'
import type { LeaseFence } from './types-common.ts'

interface LayerRow extends Record<string, unknown> {
  layerKey: string
  revision: number
  updatedAt: number
}

const LAYER_COLUMNS = 'layer_key AS "layerKey", revision, updated_at AS "updatedAt"'

export function pgLayerRepository(s: PgSession): LayerRepository {
  return {
    revision: async (key: LayerKey) => {
      const keys = storedLayerKeys(key, s.options.limits.label, s.options.user)
      return s.read(async (tx) => layerRevisionOf(keys, await tx.query<LayerRow>(`SELECT ${LAYER_COLUMNS} FROM store_layer_revisions WHERE layer_key = ANY($1::text[])`, [keys])))
    },
    list: async () => s.read(async (tx) => layerRevisionsOf(await tx.query<LayerRow>(`SELECT ${LAYER_COLUMNS} FROM store_layer_revisions`), s.options.user)),
  }
}

interface LeaseRow extends Record<string, unknown> {
  name: string
  holder: string
  token: number
  acquiredAt: number
  expiresAt: number
}

const LEASE_COLUMNS = 'name, holder, token, acquired_at AS "acquiredAt", expires_at AS "expiresAt"'

/** The lease row, locked until the write ends (a concurrent fenced write or takeover waits). */
async function lockedLease(tx: PgTx, name: string): Promise<Lease | undefined> {
  return (await tx.query<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM store_leases WHERE name = $1 FOR UPDATE`, [name]))[0]
}

export function pgLeaseRepository(s: PgSession): LeaseRepository {
  const setExpiry = async (tx: PgTx, name: string, expiresAt: number): Promise<Lease> =>
    (await tx.query<LeaseRow>(`UPDATE store_leases SET expires_at = $2 WHERE name = $1 RETURNING ${LEASE_COLUMNS}`, [name, expiresAt]))[0]!
  return {
    acquire: async (nameInput: string, holderInput: string, ttlInput: number, options?: AcquireLeaseOptions) => {
      const name = s.leaseName(nameInput)
      const holder = leaseHolder(holderInput)
      const ttlMs = leaseTtl(ttlInput)
      return s.write(async (tx) => {
        const now = s.now()
        const plan = planAcquire(await lockedLease(tx, name), holder, now, options?.isHolderStale)
        if (plan.kind === 'refuse') return undefined
        // Re-acquiring a live lease of one's own is a renewal: same token.
        if (plan.kind === 'renew') return setExpiry(tx, name, now + ttlMs)
        const [lease] = await tx.query<LeaseRow>(
          `INSERT INTO store_leases (name, holder, token, acquired_at, expires_at) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
           RETURNING ${LEASE_COLUMNS}`,
          [name, holder, plan.token, now, now + ttlMs],
        )
        await s.audit(tx, { entity: 'lease', entityId: name, audit: plan.takeover ? 'lease.takeover' : 'lease.acquire', revision: plan.token }, options, now)
        return lease
      }, options)
    },
    renew: async (lease, ttlInput, options) => {
      const fence = s.fenceOf(lease)
      const holder = leaseHolder(lease?.holder)
      const ttlMs = leaseTtl(ttlInput)
      return s.write(async (tx) => {
        if (!heldBy(await lockedLease(tx, fence.name), fence, holder)) {
          await s.assertFence(tx, fence)
          throw new MemoryStoreError('fenced', `lease ${fence.name} is not held by ${holder}`)
        }
        // An expired lease nobody took over still carries this token: renewing it is safe.
        return setExpiry(tx, fence.name, s.now() + ttlMs)
      }, options)
    },
    release: async (lease, options) => {
      const fence = s.fenceOf(lease)
      const holder = leaseHolder(lease?.holder)
      return s.write(async (tx) => {
        if (!heldBy(await lockedLease(tx, fence.name), fence, holder)) return false
        const now = s.now()
        // The row stays (expires_at 0) so the next holder's token is still larger.
        await setExpiry(tx, fence.name, 0)
        await s.audit(tx, { entity: 'lease', entityId: fence.name, audit: 'lease.release', revision: fence.token }, options, now)
        return true
      }, options)
    },
    get: async (nameInput: string) => {
      const name = s.leaseName(nameInput)
      return s.read(async (tx) => (await tx.query<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM store_leases WHERE name = $1`, [name]))[0])
    },
    check: async (fenceInput: LeaseFence) => {
      const fence = s.fenceOf(fenceInput)
      // Inside store.transaction this joins it, whose writer lock keeps the answer true until
      // it ends; alone (a read-only snapshot, no row lock) it is a hint.
      return s.read((tx) => s.assertFence(tx, fence, false))
    },
  }
}
