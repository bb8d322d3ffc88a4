/** What several processes on one database coordinate with: layer revisions and fenced leases. */
import type { LeaseFence, WriteOptions } from './types-common.ts'

/**
 * A memory layer: the global one, or one workspace's. Session-scoped rows belong to no layer.
 * Layer keys are `'global'` and `'workspace:<path>'` (see {@link layerKeyOf}).
 */
export interface LayerKey {
  scope: 'global' | 'workspace'
  /** Required for workspace scope. */
  workspace?: string | null
}

/** The current revision of a layer. */
export interface LayerRevision {
  scope: 'global' | 'workspace'
  /** `null` for the global layer. */
  workspace: string | null
  /** `'global'` or `'workspace:<path>'`. */
  key: string
  /** 0 for a layer that never changed; +1 with every committed write to it. */
  revision: number
  /** When it last changed (0 when never). */
  updatedAt: number
}

/**
 * Revisions of the memory layers. A layer's revision increases in the same transaction as
 * every write that changes what the layer holds: adding, updating (text, kind, priority,
 * flags), superseding, merging, deleting or importing one of its memories, a write to one of
 * its scenes, or to its persona. Recording a recall (`touchRecalled`) and attaching an
 * embedding do not change what the layer holds and do not bump it.
 */
export interface LayerRepository {
  /** The layer's revision (0 when it never changed). */
  revision(key: LayerKey): Promise<LayerRevision>
  /** Every layer that ever changed: global first, then workspaces by path. */
  list(): Promise<LayerRevision[]>
}

// leases

/** A lease as stored. */
export interface Lease {
  name: string
  /** Who holds it (any stable id of the holding process or job, e.g. `host:pid:uuid`). */
  holder: string
  /** The fencing token: grows with every acquisition by a new holder, never reused. */
  token: number
  acquiredAt: number
  /** Epoch ms after which another holder may take the lease over; 0 once released. */
  expiresAt: number
}

/** Options of {@link LeaseRepository.acquire}. */
export interface AcquireLeaseOptions extends WriteOptions {
  /**
   * Whether the current (unexpired) holder is known to be gone, e.g. a process on this host
   * that no longer runs; such a lease is taken over at once instead of after it expires.
   * Called inside the acquiring transaction; must be synchronous and must not throw.
   */
  isHolderStale?: (holder: string) => boolean
}

/**
 * Time-limited single-writer leases with fencing tokens, for background writers that several
 * processes on one database might run at once (distillation, consolidation, sweeps). A
 * holder renews its lease (heartbeat) well before `expiresAt`; a crashed holder stops renewing
 * and its lease is taken over after it expires. Every write made on behalf of the lease names
 * it in {@link WriteOptions.fence}, so a holder that was paused past its expiry and lost the
 * lease cannot write any more. Interactive writes do not need a lease: SQLite's locking keeps
 * them correct.
 */
export interface LeaseRepository {
  /**
   * Take the lease for `ttlMs` when it is free, expired, released, stale, or already held by
   * `holder` (then it is extended, same token).
   * @returns the lease, or `undefined` when another holder has it.
   */
  acquire(name: string, holder: string, ttlMs: number, options?: AcquireLeaseOptions): Promise<Lease | undefined>
  /**
   * Extend a held lease to now + `ttlMs`. An expired lease nobody took over is renewed.
   * @throws MemoryStoreError `fenced` when another holder took it over (or it was released).
   */
  renew(lease: LeaseFence & { holder: string }, ttlMs: number, options?: WriteOptions): Promise<Lease>
  /** Give the lease up (its token is kept, so it is never reused). @returns false when it was not held with this token. */
  release(lease: LeaseFence & { holder: string }, options?: WriteOptions): Promise<boolean>
  /** The lease as stored, held or not. */
  get(name: string): Promise<Lease | undefined>
  /**
   * Resolve when `fence` is the live lease, reject with `fenced` otherwise. Inside
   * {@link MemoryStore.transaction} the answer holds until the transaction ends (it holds the
   * write lock); outside it is only a hint. Prefer {@link WriteOptions.fence}.
   */
  check(fence: LeaseFence): Promise<void>
}
