/**
 * Export and import of the store as versioned JSONL (`export-format.ts` encodes and checks
 * the lines), the backend-neutral half: the order and paging of an export, the import loop
 * with its counts, and the checked column values of every imported record (checked as a live
 * write would check them). Each backend supplies only its snapshot, its "exists?" queries,
 * its INSERTs and its transaction (`sqlite-transfer.ts`, `pg-transfer.ts`).
 */
import { isMemoryStoreError, MemoryStoreError } from './errors.ts'
import { encodeExportRecord, EXPORT_FORMAT, EXPORT_VERSION, type ExportRecord, parseImportLine } from './export-format.ts'
import { memoryValuesOf, type MemoryValues, personaKeyOf, personaOwnerOf, type PersonaRowKey, placementOf, type SceneValues } from './record-values.ts'
import { estimateTokens, prepareLabel, prepareText, type TextLimits } from './text.ts'
import type { Flags, MessageRole } from './types-common.ts'
import type { Conversation, Message } from './types-conversations.ts'
import type { Memory } from './types-memories.ts'
import type { Persona } from './types-persona.ts'
import type { Scene } from './types-scenes.ts'
import { auditEntityId } from './audit-id.ts'
import type { EntityName } from './types-common.ts'
import type { CopiedAuditEntry, ImportOptions, ImportResult, RecordCounts } from './types-store.ts'
import { requireUser } from './user.ts'
import { flagsObject, idList, requireCount, requireId, requireRole, requireScope, requireTime } from './validate.ts'

/** One record of an export (every line but the header). */
export type ImportedRecord = Exclude<ExportRecord, { type: 'header' }>

/** The records of each type, in the order an export writes them. */
export interface ExportedRecords {
  conversation: Conversation
  message: Message
  memory: Memory
  scene: Scene
  persona: Persona
}

/** Rows per page of an export read. */
export const EXPORT_PAGE = 1_000

/** What a backend gives an export: one consistent snapshot, read in pages. */
export interface ExportSource {
  now(): number
  /** The `store` schema version of the database (for the header). */
  schemaVersion(): number | Promise<number>
  /**
   * `limit` records of `type` from `offset`, in the export order of that type (conversations
   * by start, messages by conversation and seq, memories and scenes by creation, persona by key).
   */
  page<K extends keyof ExportedRecords>(type: K, offset: number, limit: number): ExportedRecords[K][] | Promise<ExportedRecords[K][]>
}

/** The JSONL lines of an export: the header, then every record type in turn, page by page. */
export async function* exportLines(source: ExportSource): AsyncGenerator<string> {
  yield encodeExportRecord({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: source.now(), schema: await source.schemaVersion() })
  for (const type of ['conversation', 'message', 'memory', 'scene', 'persona'] as const) {
    for (let offset = 0; ; offset += EXPORT_PAGE) {
      const rows = await source.page(type, offset, EXPORT_PAGE)
      for (const data of rows) yield encodeExportRecord({ type, data } as ExportRecord)
      if (rows.length < EXPORT_PAGE) break
    }
  }
}

const COUNTER_OF = {
  conversation: 'conversations',
  message: 'messages',
  memory: 'memories',
  scene: 'scenes',
  persona: 'persona',
} as const satisfies Record<ImportedRecord['type'], keyof RecordCounts>

/** The lines of an import as an iterable. @throws MemoryStoreError `invalid-argument` for anything else. */
export function importSourceOf(lines: string | Iterable<string> | AsyncIterable<string>): Iterable<string> | AsyncIterable<string> {
  const source: Iterable<string> | AsyncIterable<string> = typeof lines === 'string' ? lines.split('\n') : lines
  if (!source || (typeof (source as Iterable<string>)[Symbol.iterator] !== 'function' && typeof (source as AsyncIterable<string>)[Symbol.asyncIterator] !== 'function')) {
    throw new MemoryStoreError('invalid-argument', 'importJsonl needs a string or an iterable of lines')
  }
  return source
}

/** One record of an import with the line it came from (errors name the line). */
export interface NumberedRecord<R extends ImportedRecord = ImportedRecord> {
  readonly record: R
  readonly line: number
}

/** An `invalid-argument` error of a record, prefixed with its line; any other error unchanged. */
export function lineError(error: unknown, line: number): unknown {
  return isMemoryStoreError(error, 'invalid-argument') ? new MemoryStoreError('invalid-argument', `line ${line}: ${error.message}`) : error
}

/** `fn()`, its `invalid-argument` errors naming `line`. */
export function atLine<T>(line: number, fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw lineError(error, line)
  }
}

/**
 * Parse every line and hand each record to `importRecord` (inside the caller's transaction),
 * counting what it inserted and skipped. `invalid-argument` errors get the line number.
 * @throws MemoryStoreError `unsupported-format` when the stream has no header.
 */
export async function importLines(
  source: Iterable<string> | AsyncIterable<string>,
  importRecord: (record: ImportedRecord) => boolean | Promise<boolean>,
): Promise<ImportResult> {
  return importRuns(source, 1, async ([entry]) => {
    try {
      return [await importRecord(entry!.record)]
    } catch (error) {
      throw lineError(error, entry!.line)
    }
  })
}

/**
 * Parse every line and hand the records to `importRun` in runs: consecutive records of one
 * type, at most `size` of them, in file order (a run sees every earlier run's rows, so a
 * message finds a conversation earlier in the file exactly as record by record). `importRun`
 * returns, per record, whether it inserted it; it names a bad record's line itself
 * ({@link atLine}, {@link lineError}).
 * @throws MemoryStoreError `unsupported-format` when the stream has no header.
 */
export async function importRuns(
  source: Iterable<string> | AsyncIterable<string>,
  size: number,
  importRun: (run: NumberedRecord[]) => Promise<boolean[]>,
): Promise<ImportResult> {
  const inserted: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
  const skipped: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
  let run: NumberedRecord[] = []
  const flush = async () => {
    if (run.length === 0) return
    const added = await importRun(run)
    for (const [i, entry] of run.entries()) {
      const counter = COUNTER_OF[entry.record.type]
      if (added[i]) inserted[counter]++
      else skipped[counter]++
    }
    run = []
  }
  let lineNumber = 0
  let sawHeader = false
  for await (const raw of source) {
    lineNumber++
    for (const line of String(raw).split('\n')) {
      if (line.trim().length === 0) continue
      const record = parseImportLine(line, lineNumber, sawHeader)
      if (record.type === 'header') {
        sawHeader = true
        continue
      }
      if (run.length > 0 && run[0]!.record.type !== record.type) await flush()
      run.push({ record, line: lineNumber })
      if (run.length >= size) await flush()
    }
  }
  await flush()
  if (!sawHeader) throw new MemoryStoreError('unsupported-format', `not a ${EXPORT_FORMAT} stream: no header line`)
  return { inserted, skipped }
}

/** The error of an import whose rows refer to rows neither in the database nor in the file. */
export function danglingImportError(count: number): MemoryStoreError {
  return new MemoryStoreError('invalid-argument', `import refers to ${count} missing row(s) (e.g. a superseding memory not in the file); nothing was imported`)
}

/** The error of an imported message whose conversation is missing. */
export function orphanMessageError(id: string, conversationId: string): MemoryStoreError {
  return new MemoryStoreError('invalid-argument', `message ${id} belongs to conversation ${conversationId}, which is not in the database or earlier in the file`)
}

/**
 * The author of an imported record: its `createdBy` (checked like the `user` option), or, for
 * a record without one (`''`, or an export from before user identities), `unattributedAs`
 * (`ImportOptions.unattributedAs`: `migrate` stamps the target user there) else `''`.
 */
export function importedCreator(value: unknown, unattributedAs: string): string {
  if (value === undefined || value === null || value === '') return unattributedAs
  return requireUser(value, 'createdBy')
}

/** The user an import stamps on records without an author (`ImportOptions.unattributedAs`, checked), else `''`. */
export function importStamp(options: ImportOptions | undefined): string {
  return options?.unattributedAs === undefined ? '' : requireUser(options.unattributedAs, 'unattributedAs')
}

/** The columns of an imported conversation. */
export function importedConversation(limits: TextLimits, d: Conversation, unattributedAs = ''): Conversation {
  return {
    id: requireId(d.id, 'id'),
    workspace: prepareLabel(d.workspace ?? '', 'workspace', limits.label, true),
    title: d.title === null || d.title === undefined ? null : prepareLabel(d.title, 'title', limits.label, true) || null,
    startedAt: requireTime(d.startedAt, 'startedAt'),
    endedAt: d.endedAt === null || d.endedAt === undefined ? null : requireTime(d.endedAt, 'endedAt'),
    updatedAt: requireTime(d.updatedAt, 'updatedAt'),
    flags: flagsObject(d.flags ?? {}),
    createdBy: importedCreator(d.createdBy, unattributedAs),
  }
}

/** The keys of an imported message, checked before the "exists?" queries. */
export function importedMessageKeys(d: Message): { id: string; conversationId: string; hostMessageId: string } {
  return { id: requireId(d.id, 'id'), conversationId: requireId(d.conversationId, 'conversationId'), hostMessageId: requireId(d.hostMessageId, 'hostMessageId') }
}

/** The columns of an imported message (its keys checked by {@link importedMessageKeys}). */
export function importedMessage(limits: TextLimits, d: Message, unattributedAs = ''): Message & { role: MessageRole; flags: Flags } {
  const keys = importedMessageKeys(d)
  const text = prepareText(d.text, 'text', limits.message).text
  const role = requireRole(d.role)
  const createdAt = requireTime(d.createdAt, 'createdAt')
  return {
    ...keys,
    role,
    text,
    turn: requireCount(d.turn ?? 0, 'turn'),
    seq: requireCount(d.seq, 'seq'),
    sourceIds: idList(d.sourceIds, 'sourceIds'),
    tokensEstimate: d.tokensEstimate === undefined ? estimateTokens(text) : requireCount(d.tokensEstimate, 'tokensEstimate'),
    createdAt,
    flags: flagsObject(d.flags ?? {}),
    createdBy: importedCreator(d.createdBy, unattributedAs),
  }
}

/** The columns of an imported memory. */
export function importedMemory(
  limits: TextLimits,
  d: Memory,
  unattributedAs = '',
): MemoryValues & { id: string; revision: number; createdAt: number; updatedAt: number; lastRecalledAt: number | null; supersededBy: string | null; createdBy: string } {
  const id = requireId(d.id, 'id')
  const values = memoryValuesOf(
    limits,
    {
      kind: d.kind,
      text: d.text,
      scope: d.scope,
      workspace: d.workspace,
      sessionId: d.sessionId,
      sourceMessageIds: d.sourceMessageIds,
      priority: d.priority,
      flags: d.flags ?? {},
      embedding: d.embedding ?? null,
      embeddingModel: d.embeddingModel ?? null,
    },
  )
  return {
    id,
    ...values,
    revision: d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision')),
    createdAt: requireTime(d.createdAt, 'createdAt'),
    updatedAt: requireTime(d.updatedAt, 'updatedAt'),
    lastRecalledAt: d.lastRecalledAt === null || d.lastRecalledAt === undefined ? null : requireTime(d.lastRecalledAt, 'lastRecalledAt'),
    supersededBy: d.supersededBy === null || d.supersededBy === undefined ? null : requireId(d.supersededBy, 'supersededBy'),
    createdBy: importedCreator(d.createdBy, unattributedAs),
  }
}

/** The columns of an imported scene. */
export function importedScene(limits: TextLimits, d: Scene, unattributedAs = ''): SceneValues & { id: string; revision: number; createdAt: number; updatedAt: number; createdBy: string } {
  const id = requireId(d.id, 'id')
  const scope = requireScope(d.scope)
  const placement = placementOf(limits, scope, d.workspace, d.sessionId)
  const revision = d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision'))
  return {
    id,
    title: prepareLabel(d.title, 'title', limits.label),
    summary: prepareText(d.summary, 'summary', limits.scene).text,
    scope,
    ...placement,
    memoryIds: idList(d.memoryIds, 'memoryIds'),
    revision,
    createdAt: requireTime(d.createdAt, 'createdAt'),
    updatedAt: requireTime(d.updatedAt, 'updatedAt'),
    flags: flagsObject(d.flags ?? {}),
    createdBy: importedCreator(d.createdBy, unattributedAs),
  }
}

/** The stored key of an imported persona document (a global one is its author's), checked before the "exists?" query. */
export function importedPersonaKey(limits: TextLimits, d: Persona, unattributedAs = ''): PersonaRowKey {
  const key = personaKeyOf(limits, { scope: d.scope, workspace: d.workspace } as Parameters<typeof personaKeyOf>[1])
  return { ...key, owner: personaOwnerOf(key.scope, importedCreator(d.createdBy, unattributedAs)) }
}

/** The columns of an imported persona document. */
export function importedPersona(limits: TextLimits, d: Persona, unattributedAs = ''): PersonaRowKey & { text: string; version: number; updatedAt: number; createdBy: string } {
  const key = importedPersonaKey(limits, d, unattributedAs)
  const version = Math.max(1, requireCount(d.version, 'version'))
  const createdBy = importedCreator(d.createdBy, unattributedAs)
  return { ...key, text: prepareText(d.text, 'text', limits.persona).text, version, updatedAt: requireTime(d.updatedAt, 'updatedAt'), createdBy }
}

/** What `TransferService.present` looks one record up by: an id, or a persona's stored key. */
export type PresenceKey = { readonly type: 'conversation' | 'message' | 'memory' | 'scene'; readonly id: string } | { readonly type: 'persona'; readonly key: PersonaRowKey }

/** The lookup key of each export record line (see `TransferService.present`). @throws MemoryStoreError `invalid-argument` naming the line */
export function presenceKeys(limits: TextLimits, lines: readonly string[], options: Pick<ImportOptions, 'unattributedAs'> | undefined): PresenceKey[] {
  if (!Array.isArray(lines)) throw new MemoryStoreError('invalid-argument', 'present needs an array of export record lines')
  const stamp = importStamp(options)
  return lines.map((line, index) => {
    const record = parseImportLine(String(line), index + 1, true) as ImportedRecord
    return atLine(index + 1, (): PresenceKey => (record.type === 'persona' ? { type: 'persona', key: importedPersonaKey(limits, record.data, stamp) } : { type: record.type, id: requireId(record.data.id, 'id') }))
  })
}

/** The store table of each record type that is keyed by `id`. */
export const PRESENCE_TABLES = { conversation: 'store_conversations', message: 'store_messages', memory: 'store_memories', scene: 'store_scenes' } as const

/** `transfer.messageVectorCount`: every vector, whatever its model. */
export const MESSAGE_VECTOR_COUNT_SQL = 'SELECT COUNT(*) AS n FROM store_message_vectors'

/** Every user's rows per record type, one query each (`TransferService.counts`). */
export const TRANSFER_COUNTS_SQL: Readonly<Record<keyof RecordCounts, string>> = {
  conversations: 'SELECT COUNT(*) AS n FROM store_conversations',
  messages: 'SELECT COUNT(*) AS n FROM store_messages',
  memories: 'SELECT COUNT(*) AS n FROM store_memories',
  scenes: 'SELECT COUNT(*) AS n FROM store_scenes',
  persona: 'SELECT COUNT(*) AS n FROM store_persona',
}

/** Audit entries from another database, checked (`TransferService.appendAudit`). @throws MemoryStoreError `invalid-argument` naming the entry and field */
export function copiedAuditEntries(entries: readonly CopiedAuditEntry[]): CopiedAuditEntry[] {
  if (!Array.isArray(entries)) throw new MemoryStoreError('invalid-argument', 'appendAudit needs an array of audit entries')
  return entries.map(copiedAuditEntry)
}

/** One audit entry from another database, checked. @throws MemoryStoreError `invalid-argument` naming the entry and field */
function copiedAuditEntry(entry: CopiedAuditEntry, index: number): CopiedAuditEntry {
  const field = (name: string) => `entries[${index}].${name}`
  if (!entry || typeof entry !== 'object') throw new MemoryStoreError('invalid-argument', `entries[${index}] must be an audit entry object`)
  const entity = requireId(entry.entity, field('entity')) as EntityName
  const op = requireId(entry.op, field('op'))
  return {
    at: requireTime(entry.at, field('at')),
    op: op as CopiedAuditEntry['op'],
    entity,
    entityId: auditEntityId(entity, requireId(entry.entityId, field('entityId'))),
    actor: entry.actor === null || entry.actor === undefined ? null : requireId(entry.actor, field('actor')),
    revision: entry.revision === null || entry.revision === undefined ? null : requireCount(entry.revision, field('revision')),
    createdBy: entry.createdBy === '' || entry.createdBy === undefined ? '' : requireUser(entry.createdBy, field('createdBy')),
  }
}
