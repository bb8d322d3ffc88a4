/**
 * `migrate` of what is neither a record nor a package row: the store's meta rows and its
 * audit log.
 *
 * - **Meta rows** split in two. Per store, never copied: the store's own `store.` keys
 *   (backend-internal: the search index's build state) and `reembed`'s checkpoint (a resume
 *   point of a run over that database's memories: in a team database it would make
 *   `reembed --all` skip everyone else's). Every other key is the source's setting or state
 *   (a package's, a tool's) and is copied unless the target has the key: the target's value is
 *   kept, and a key whose values differ is named in the report (`differing`), never
 *   overwritten. Verified: every copied key is in the target.
 * - **The audit log** is the users' history (who changed what, when): every entry is appended
 *   to the target's log under the target's next id, with its time, operation, entity, actor,
 *   revision and user kept, in pages; each page and the ledger's resume point (the last source
 *   id copied, `migrate-ledger.ts`) commit together, so a stopped run resumed copies no entry
 *   twice. Verified: no source entry past the resume point.
 */
import type { MemoryStore } from '@dsh-memory/store'
import { CliError } from '../io.ts'
import type { SourceLedger } from './migrate-ledger.ts'

/** The meta keys that belong to one store and are never copied (see the module comment). */
export const PER_STORE_META = { prefix: 'store.', keys: ['cli:reembed-all'] } as const

/** The store's most meta rows per `list`; a source with more is refused rather than half copied. */
const META_LIST_LIMIT = 10_000

/** The audit log's largest page (`audit.list`'s most). */
const AUDIT_PAGE_LIMIT = 10_000

/** The meta rows' line of a migrate report. */
export interface MetaReport {
  /** Keys written by this run. */
  copied: number
  /** Keys the target had with the same value. */
  alreadyPresent: number
  /** Keys the target had with another value: the target's is kept. */
  differing: string[]
  /** Null until verified. */
  verified: { readonly source: number; readonly target: number; readonly missing: number } | null
}

/** The audit log's line of a migrate report. */
export interface AuditReport {
  /** Entries appended by this run. */
  copied: number
  /** Null until verified. */
  verified: { readonly source: number; readonly target: number; readonly missing: number } | null
}

const copyable = (key: string) => !key.startsWith(PER_STORE_META.prefix) && !(PER_STORE_META.keys as readonly string[]).includes(key)

/** Every copyable meta row of `store`. @throws CliError when there are more than the store lists at once */
async function metaRows(store: MemoryStore): Promise<Map<string, string>> {
  const entries = await store.meta.list('', { limit: META_LIST_LIMIT })
  if (entries.length >= META_LIST_LIMIT) throw new CliError('failed', `${META_LIST_LIMIT.toLocaleString('en-US')} or more meta rows: more than migrate copies; nothing of them was copied`)
  return new Map(entries.filter((entry) => copyable(entry.key)).map((entry) => [entry.key, entry.value]))
}

/** Copy (unless `checkOnly`) and verify the meta rows (see the module comment). */
export async function migrateMeta(source: MemoryStore, target: MemoryStore, checkOnly: boolean): Promise<MetaReport> {
  const report: MetaReport = { copied: 0, alreadyPresent: 0, differing: [], verified: null }
  const rows = await metaRows(source)
  if (!checkOnly && rows.size > 0) {
    await target.transaction(async (tx) => {
      for (const [key, value] of rows) {
        const held = await tx.meta.get(key)
        if (held === undefined) {
          await tx.meta.set(key, value, { actor: 'cli' })
          report.copied++
        } else if (held === value) report.alreadyPresent++
        else report.differing.push(key)
      }
    })
  }
  const there = await metaRows(target)
  if (checkOnly) report.differing = [...rows].filter(([key, value]) => there.has(key) && there.get(key) !== value).map(([key]) => key)
  report.verified = { source: rows.size, target: there.size, missing: [...rows.keys()].filter((key) => !there.has(key)).length }
  return report
}

/**
 * Copy the source's audit entries the ledger has not recorded yet, page by page.
 * @returns false when `signal` stopped it
 */
export async function copyAudit(source: MemoryStore, target: MemoryStore, ledger: SourceLedger, report: AuditReport, options: { pageSize?: number; signal?: AbortSignal; onPage?: () => void }): Promise<boolean> {
  const limit = Math.min(options.pageSize ?? 1_000, AUDIT_PAGE_LIMIT)
  for (;;) {
    const entries = await source.audit.list({ afterId: await ledger.auditAfter(), limit })
    if (entries.length === 0) return true
    await target.transaction(async (tx) => {
      await tx.transfer.appendAudit(entries.map(({ id: _id, ...entry }) => entry))
      await ledger.setAuditAfter(entries[entries.length - 1]!.id, Date.now())
    })
    report.copied += entries.length
    options.onPage?.()
    if (entries.length < limit) return true
    if (options.signal?.aborted) return false
  }
}

/** Count the audit log on both ends and the source entries past the ledger's resume point. */
export async function verifyAudit(source: MemoryStore, target: MemoryStore, ledger: SourceLedger): Promise<NonNullable<AuditReport['verified']>> {
  let missing = 0
  for (let after = await ledger.auditAfter(); ; ) {
    const entries = await source.audit.list({ afterId: after, limit: AUDIT_PAGE_LIMIT })
    missing += entries.length
    if (entries.length < AUDIT_PAGE_LIMIT) break
    after = entries[entries.length - 1]!.id
  }
  return { source: (await source.stats.counts()).auditEntries, target: (await target.stats.counts()).auditEntries, missing }
}
