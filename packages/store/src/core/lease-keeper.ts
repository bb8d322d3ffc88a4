/**
 * Holding a lease from {@link LeaseRepository} for a stretch of background work: acquire,
 * renew on a heartbeat, notice when it was lost, release. The lease itself (and the fencing
 * check every write makes) lives in the store; this module only keeps the timer.
 */
import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { isMemoryStoreError } from './errors.ts'
import type { LeaseFence } from './types-common.ts'
import type { Lease } from './types-coordination.ts'
import type { CoordinatedMemoryStore } from './types-store.ts'

/** Options of {@link holdLease}. */
export interface HoldLeaseOptions {
  /** Lease time to live; a crashed holder's lease is taken over this long after its last heartbeat. */
  readonly ttlMs: number
  /** Heartbeat period. Default a third of `ttlMs`, so two heartbeats may fail before the lease lapses. */
  readonly renewEveryMs?: number
  /** See {@link AcquireLeaseOptions.isHolderStale}. Default {@link isLocalHolderGone}. */
  readonly isHolderStale?: (holder: string) => boolean
  /** Called once when a heartbeat finds the lease taken over (the holder must stop writing). */
  readonly onLost?: (error: unknown) => void
  /** Audit actor of the acquisition and release. */
  readonly actor?: string
  /** Timer (tests pass a fake clock's); returns a cancel function. Default an unref'd `setTimeout`. */
  readonly setTimer?: (fn: () => void, ms: number) => () => void
}

/** A lease held with a heartbeat. */
export interface HeldLease {
  /** What to pass as `fence` with every write made on behalf of the lease. */
  readonly fence: LeaseFence
  /** The lease as last acquired or renewed. */
  readonly lease: Lease
  /** True once a heartbeat found the lease taken over, or after {@link HeldLease.release}. */
  readonly lost: boolean
  /** Stop the heartbeat and give the lease up. Idempotent; never rejects. */
  release(): Promise<void>
}

function defaultTimer(fn: () => void, ms: number): () => void {
  const timer = setTimeout(fn, ms)
  timer.unref?.()
  return () => clearTimeout(timer)
}

/**
 * A holder id unique to this process and call site: `host:pid:uuid`, so {@link isLocalHolderGone}
 * can tell a crashed process on this host from a live one.
 */
export function leaseHolderId(): string {
  return `${hostname()}:${process.pid}:${randomUUID()}`
}

/**
 * Whether a holder id made by {@link leaseHolderId} belongs to a process on this host that no
 * longer runs. Holders on other hosts, in this process, or in an unknown format are presumed
 * alive (their leases expire normally).
 */
export function isLocalHolderGone(holder: string): boolean {
  const [host, pidText] = holder.split(':')
  if (host !== hostname()) return false
  const pid = Number(pidText)
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/**
 * Acquire `name` for `holder` and keep it alive until released.
 * @returns the held lease, or `undefined` when another live holder has it.
 * @throws what {@link LeaseRepository.acquire} throws (e.g. `busy`, `invalid-argument`).
 */
export async function holdLease(store: CoordinatedMemoryStore, name: string, holder: string, options: HoldLeaseOptions): Promise<HeldLease | undefined> {
  const acquired = await store.leases.acquire(name, holder, options.ttlMs, {
    isHolderStale: options.isHolderStale ?? isLocalHolderGone,
    ...(options.actor ? { actor: options.actor } : {}),
  })
  if (!acquired) return undefined
  const setTimer = options.setTimer ?? defaultTimer
  const every = Math.max(1, Math.floor(options.renewEveryMs ?? options.ttlMs / 3))
  let lease = acquired
  let lost = false
  let released = false
  let cancel: () => void = () => {}
  let beating: Promise<void> | undefined

  const beat = async () => {
    try {
      lease = await store.leases.renew({ name, holder, token: acquired.token }, options.ttlMs)
    } catch (error) {
      if (isMemoryStoreError(error, 'fenced')) {
        lost = true
        try {
          options.onLost?.(error)
        } catch {
          // a failing listener must not stop the bookkeeping
        }
        return
      }
      // busy or closed: try again on the next beat; the fence keeps writes safe meanwhile.
    }
    if (!lost && !released) schedule()
  }
  const schedule = () => {
    cancel = setTimer(() => {
      beating = beat()
    }, every)
  }
  schedule()

  return {
    fence: { name, token: acquired.token },
    get lease() {
      return lease
    },
    get lost() {
      return lost || released
    },
    async release() {
      if (released) return
      released = true
      cancel()
      await beating?.catch(() => {})
      if (lost) return
      try {
        await store.leases.release({ name, holder, token: acquired.token }, options.actor ? { actor: options.actor } : undefined)
      } catch {
        // the lease expires on its own
      }
    },
  }
}
