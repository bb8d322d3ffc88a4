/**
 * The rules of leases and fencing that do not depend on the database: argument checks, what an
 * acquisition does with the row it found, and why a fence is refused. The SQLite
 * (`sqlite-leases.ts`, `sqlite-session.ts`) and PostgreSQL (`pg-leases.ts`, `pg-session.ts`)
 * backends only read and write the row.
 */
import { MemoryStoreError } from './errors.ts'
import type { Lease } from './types-coordination.ts'
import type { LeaseFence } from './types-common.ts'
import { requireCount, requireId } from './validate.ts'

const MAX_LEASE_NAME = 200
const MAX_LEASE_HOLDER = 200
/** A lease longer than a day is a lock nobody can recover from a crash; refuse it. */
const MAX_LEASE_TTL_MS = 86_400_000

/** @throws MemoryStoreError `invalid-argument` */
export function leaseName(value: unknown): string {
  const name = requireId(value, 'lease name')
  if (name.length > MAX_LEASE_NAME) throw new MemoryStoreError('invalid-argument', `lease name must be at most ${MAX_LEASE_NAME} characters`)
  return name
}

/** @throws MemoryStoreError `invalid-argument` */
export function leaseHolder(value: unknown): string {
  const holder = requireId(value, 'holder')
  if (holder.length > MAX_LEASE_HOLDER) throw new MemoryStoreError('invalid-argument', `holder must be at most ${MAX_LEASE_HOLDER} characters`)
  return holder
}

/** @throws MemoryStoreError `invalid-argument` */
export function leaseTtl(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_LEASE_TTL_MS) {
    throw new MemoryStoreError('invalid-argument', `ttlMs must be an integer between 1 and ${MAX_LEASE_TTL_MS}`)
  }
  return value
}

/** A fence as given by a caller, checked. @throws MemoryStoreError `invalid-argument` */
export function leaseFence(fence: unknown): LeaseFence {
  const value = fence as LeaseFence | undefined
  if (!value || typeof value !== 'object') throw new MemoryStoreError('invalid-argument', 'fence must be { name, token }')
  return { name: leaseName(value.name), token: requireCount(value.token, 'fence.token') }
}

/** The stored columns of a lease a fence is checked against. */
export type LeaseRow = Pick<Lease, 'holder' | 'token' | 'expiresAt'>

/** `fenced` unless `fence` names the live lease `row` (as read inside the write); else undefined. */
export function fenceRefusal(fence: LeaseFence, row: LeaseRow | undefined, now: number): MemoryStoreError | undefined {
  if (row && row.token === fence.token && row.expiresAt > now) return undefined
  const why = !row
    ? 'was never acquired'
    : row.token !== fence.token
      ? `was taken over (token ${row.token} now, this writer holds ${fence.token})`
      : row.expiresAt === 0
        ? 'was released'
        : 'expired'
  return new MemoryStoreError('fenced', `lease ${fence.name} ${why}; a stale holder may not write`)
}

/** What {@link planAcquire} decided. */
export type AcquirePlan =
  /** The holder's own live lease: extend it, same token. */
  | { kind: 'renew' }
  /** Another holder's live lease: nothing happens. */
  | { kind: 'refuse' }
  /** Free, expired, released or stale: take it with `token`; `takeover` when someone had it. */
  | { kind: 'take'; token: number; takeover: boolean }

/**
 * What acquiring `row` (read inside the acquiring write) for `holder` does. `isHolderStale` may
 * say a live holder is gone (its errors count as "not stale").
 */
export function planAcquire(row: (LeaseRow & { holder: string }) | undefined, holder: string, now: number, isHolderStale?: (holder: string) => boolean): AcquirePlan {
  if (row && row.holder === holder && row.expiresAt > now) return { kind: 'renew' }
  if (row && row.expiresAt > now) {
    let stale = false
    try {
      stale = isHolderStale?.(row.holder) === true
    } catch {
      stale = false
    }
    if (!stale) return { kind: 'refuse' }
  }
  return { kind: 'take', token: (row?.token ?? 0) + 1, takeover: row !== undefined && row.expiresAt > 0 }
}

/** True when `row` is still held by `holder` with the fence's token (renew and release may act). */
export function heldBy(row: (LeaseRow & { holder: string }) | undefined, fence: LeaseFence, holder: string): boolean {
  return !!row && row.token === fence.token && row.holder === holder && row.expiresAt !== 0
}
