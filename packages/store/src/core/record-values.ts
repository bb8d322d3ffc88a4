/**
 * Input → column values of the store's records, shared by every backend (SQLite and
 * PostgreSQL) and by both write paths (live writes and import): validation with field names
 * in the errors, redaction and length caps (`text.ts`), placement rules, paging. The
 * repositories of each backend hold only their queries and call these first, before they
 * wait for the connection, so bad input fails fast and never reaches the database.
 */
import { MemoryStoreError } from './errors.ts'
import { estimateTokens, prepareLabel, prepareText } from './text.ts'
import type { TextLimits } from './text.ts'
import type { Flags, MessageRole, PageOptions, Scope } from './types-common.ts'
import type { AppendMessageInput, DeleteEmbeddingsFilter, EnsureConversationInput, MessageEmbedding, MessageFilter, MessageVectorKey, MessageVectorPage, MissingEmbeddingsFilter } from './types-conversations.ts'
import type { AddMemoryInput, Memory, UpdateMemoryPatch } from './types-memories.ts'
import type { PersonaKey } from './types-persona.ts'
import type { AddSceneInput, Scene, UpdateScenePatch } from './types-scenes.ts'
import {
  DEFAULT_PAGE,
  embeddingToBuffer,
  embeddingValue,
  flagsObject,
  idList,
  MAX_PAGE,
  pageSize,
  requireCount,
  requireFinite,
  requireId,
  requireRole,
  requireScope,
  requireTime,
  requireUpdate,
} from './validate.ts'

/** The checked page of a list call. */
export function pageOf(filter: PageOptions): { limit: number; offset: number } {
  return {
    limit: pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE),
    offset: filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset'),
  }
}

/** The workspace/session columns for a scope, enforcing which are required or forbidden. */
export function placementOf(limits: TextLimits, scope: Scope, workspaceInput: unknown, sessionInput: unknown): { workspace: string | null; sessionId: string | null } {
  const workspace =
    workspaceInput === undefined || workspaceInput === null || workspaceInput === '' ? null : prepareLabel(workspaceInput, 'workspace', limits.label)
  const sessionId = sessionInput === undefined || sessionInput === null ? null : requireId(sessionInput, 'sessionId')
  if (scope === 'global' && workspace !== null) {
    throw new MemoryStoreError('invalid-argument', 'a global memory must not have a workspace (use scope "workspace")')
  }
  if (scope === 'workspace' && workspace === null) throw new MemoryStoreError('invalid-argument', 'a workspace memory needs a workspace')
  if (scope === 'session' && sessionId === null) throw new MemoryStoreError('invalid-argument', 'a session memory needs a sessionId')
  return { workspace, sessionId }
}

/** The checked fields of `conversations.ensure` (`undefined` = not given). */
export function conversationInputOf(limits: TextLimits, input: EnsureConversationInput): { id: string; workspace: string; title: string | undefined; startedAt: number | undefined } {
  const id = requireId(input?.id, 'id')
  return {
    id,
    workspace: prepareLabel(input.workspace ?? '', 'workspace', limits.label, true),
    title: input.title === undefined || input.title === null ? undefined : prepareLabel(input.title, 'title', limits.label, true),
    startedAt: input.startedAt === undefined ? undefined : requireTime(input.startedAt, 'startedAt'),
  }
}

/**
 * What `conversations.ensure` changes on an existing row (empty: nothing). An empty
 * workspace means "unknown here", never "moved to nowhere"; an empty title changes nothing.
 */
export function conversationPatchOf(input: { workspace: string; title: string | undefined }, existing: { workspace: string; title: string | null }): { workspace?: string; title?: string } {
  const patch: { workspace?: string; title?: string } = {}
  if (input.workspace && input.workspace !== existing.workspace) patch.workspace = input.workspace
  if (input.title && input.title !== existing.title) patch.title = input.title
  return patch
}

/** The checked fields of `messages.append` (text cleaned, redacted and capped). */
export interface MessageInput {
  conversationId: string
  hostMessageId: string
  role: MessageRole
  text: string
  redactions: number
  turn: number
  /** `undefined`: the next seq of the conversation. */
  seq: number | undefined
  sourceIds: string[]
  tokensEstimate: number
  flags: Flags
  createdAt: number | undefined
}

export function messageInputOf(limits: TextLimits, input: AppendMessageInput): MessageInput {
  const conversationId = requireId(input?.conversationId, 'conversationId')
  const hostMessageId = requireId(input.hostMessageId, 'hostMessageId')
  const role = requireRole(input.role)
  const prepared = prepareText(input.text, 'text', limits.message)
  return {
    conversationId,
    hostMessageId,
    role,
    text: prepared.text,
    redactions: prepared.redactions,
    turn: input.turn === undefined ? 0 : requireCount(input.turn, 'turn'),
    seq: input.seq === undefined ? undefined : requireCount(input.seq, 'seq'),
    sourceIds: idList(input.sourceIds, 'sourceIds'),
    tokensEstimate: input.tokensEstimate === undefined ? estimateTokens(prepared.text) : requireCount(input.tokensEstimate, 'tokensEstimate'),
    flags: flagsObject(input.flags),
    createdAt: input.createdAt === undefined ? undefined : requireTime(input.createdAt, 'createdAt'),
  }
}

/** The checked filter of message list and count (`workspace` is matched through the conversation). */
export function messageFilterOf(filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'>): {
  conversationId?: string
  role?: MessageRole
  since?: number
  until?: number
  workspace?: string
} {
  return {
    conversationId: filter.conversationId === undefined ? undefined : requireId(filter.conversationId, 'conversationId'),
    role: filter.role === undefined ? undefined : requireRole(filter.role),
    since: filter.since === undefined ? undefined : requireTime(filter.since, 'since'),
    until: filter.until === undefined ? undefined : requireTime(filter.until, 'until'),
    workspace: filter.workspace,
  }
}

/** The checked arguments of `messages.around`: distinct ids (at most 1000) and a span of 0..20. */
export function aroundArgsOf(ids: readonly string[], span: number): string[] {
  const list = [...new Set(idList(ids, 'ids'))]
  if (list.length > 1_000) throw new MemoryStoreError('invalid-argument', 'around() takes at most 1000 ids')
  if (!Number.isSafeInteger(span) || span < 0 || span > 20) throw new MemoryStoreError('invalid-argument', 'span must be an integer between 0 and 20')
  return list
}

/** The most ids, entries or rows one call of the message-vector methods takes or returns. */
export const MAX_EMBEDDING_BATCH = 1_000

/** A required page size of the message-vector methods: an integer in 1..1000. */
function batchLimit(value: unknown): number {
  if (value === undefined) throw new MemoryStoreError('invalid-argument', `limit must be an integer in 1..${MAX_EMBEDDING_BATCH}`)
  return pageSize(value, MAX_EMBEDDING_BATCH, MAX_EMBEDDING_BATCH)
}

/** The checked arguments of `messages.embeddings`: distinct ids (at most 1000) and the model. */
export function embeddingIdsOf(ids: readonly string[], model: string): { ids: string[]; model: string } {
  const list = [...new Set(idList(ids, 'ids'))]
  if (list.length > MAX_EMBEDDING_BATCH) throw new MemoryStoreError('invalid-argument', `ids: embeddings() takes at most ${MAX_EMBEDDING_BATCH} ids (got ${list.length})`)
  return { ids: list, model: requireId(model, 'model') }
}

/** A checked entry of `messages.setEmbeddings`, with its dimension count. */
export interface MessageEmbeddingValues {
  messageId: string
  embeddingModel: string
  embeddingDims: number
  embedding: Float32Array
}

/**
 * The checked entries of `messages.setEmbeddings` (at most 1000), each field named with its
 * index in the errors; a (message, model) named twice keeps its last entry.
 */
export function messageEmbeddingsOf(entries: readonly MessageEmbedding[]): MessageEmbeddingValues[] {
  if (!Array.isArray(entries)) throw new MemoryStoreError('invalid-argument', 'entries must be an array')
  if (entries.length > MAX_EMBEDDING_BATCH) {
    throw new MemoryStoreError('invalid-argument', `entries: setEmbeddings() takes at most ${MAX_EMBEDDING_BATCH} entries (got ${entries.length})`)
  }
  const byKey = new Map<string, MessageEmbeddingValues>()
  entries.forEach((entry: unknown, i) => {
    if (typeof entry !== 'object' || entry === null) throw new MemoryStoreError('invalid-argument', `entries[${i}] must be an object`)
    const e = entry as Record<string, unknown>
    const messageId = requireId(e.messageId, `entries[${i}].messageId`)
    const embedding = embeddingValue(e.embedding, `entries[${i}].embedding`)
    if (!embedding) throw new MemoryStoreError('invalid-argument', `entries[${i}].embedding must be a Float32Array`)
    const embeddingModel = requireId(e.embeddingModel, `entries[${i}].embeddingModel`)
    const key = JSON.stringify([messageId, embeddingModel])
    byKey.delete(key)
    byKey.set(key, { messageId, embeddingModel, embeddingDims: embedding.length, embedding })
  })
  return [...byKey.values()]
}

/** The checked page of `transfer.messageVectors`: after a (message, model) (exclusive), at most 1000. */
export function messageVectorPageOf(page: MessageVectorPage): { after: MessageVectorKey | undefined; limit: number } {
  if (typeof page !== 'object' || page === null) throw new MemoryStoreError('invalid-argument', 'page must be an object')
  const { after } = page
  if (after === undefined) return { after: undefined, limit: batchLimit(page.limit) }
  if (typeof after !== 'object' || after === null) throw new MemoryStoreError('invalid-argument', 'after must be an object (the last vector of the previous page)')
  return { after: { messageId: requireId(after.messageId, 'after.messageId'), embeddingModel: requireId(after.embeddingModel, 'after.embeddingModel') }, limit: batchLimit(page.limit) }
}

/** The checked filter of `messages.deleteEmbeddings`: one of `model` and `exceptModel`, and the workspace. */
export function deleteEmbeddingsOf(filter: DeleteEmbeddingsFilter): { model: string; except: boolean; workspace: string | undefined } {
  if (typeof filter !== 'object' || filter === null) throw new MemoryStoreError('invalid-argument', 'filter must be an object')
  const { model, exceptModel, workspace } = filter
  if ((model === undefined) === (exceptModel === undefined)) throw new MemoryStoreError('invalid-argument', 'model, exceptModel: give exactly one of them')
  if (workspace !== undefined && typeof workspace !== 'string') throw new MemoryStoreError('invalid-argument', 'workspace must be a string')
  return model === undefined ? { model: requireId(exceptModel, 'exceptModel'), except: true, workspace } : { model: requireId(model, 'model'), except: false, workspace }
}

/** The checked filter of `messages.missingEmbeddings`: the model, the limit (1..1000) and `list`'s filters. */
export function missingEmbeddingsOf(filter: MissingEmbeddingsFilter): { model: string; limit: number; filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'since' | 'until'> } {
  if (typeof filter !== 'object' || filter === null) throw new MemoryStoreError('invalid-argument', 'filter must be an object')
  if (filter.workspace !== undefined && typeof filter.workspace !== 'string') throw new MemoryStoreError('invalid-argument', 'workspace must be a string')
  const { workspace, conversationId, since, until } = filter
  return {
    model: requireId(filter.model, 'model'),
    limit: batchLimit(filter.limit),
    filter: { workspace, conversationId, since, until },
  }
}

/**
 * Memory columns derived from input (all but id, revision and times). The embedding is its
 * float32 bytes on both backends (the PostgreSQL column type converts them to `real[]`).
 */
export type MemoryValues = Omit<Memory, 'id' | 'revision' | 'createdAt' | 'updatedAt' | 'lastRecalledAt' | 'supersededBy' | 'embedding' | 'createdBy'> & {
  embedding: Buffer | null
  embeddingDims: number | null
}

/** Validate and normalise memory input into column values (everything but ids and times). */
export function memoryValuesOf(limits: TextLimits, input: AddMemoryInput): MemoryValues {
  if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'memory input must be an object')
  const scope = requireScope(input.scope)
  const placement = placementOf(limits, scope, input.workspace, input.sessionId)
  const embedding = embeddingValue(input.embedding)
  return {
    kind: prepareLabel(input.kind, 'kind', limits.label),
    text: prepareText(input.text, 'text', limits.memory).text,
    scope,
    ...placement,
    sourceMessageIds: idList(input.sourceMessageIds, 'sourceMessageIds'),
    priority: input.priority === undefined ? 0 : requireFinite(input.priority, 'priority'),
    flags: flagsObject(input.flags),
    embedding: embedding ? embeddingToBuffer(embedding) : null,
    embeddingDims: embedding ? embedding.length : null,
    embeddingModel:
      embedding && input.embeddingModel !== undefined && input.embeddingModel !== null
        ? prepareLabel(input.embeddingModel, 'embeddingModel', limits.label)
        : null,
  }
}

/** The checked columns of `memories.update` (empty: nothing to change). */
export function memoryPatchOf(limits: TextLimits, id: string, patch: UpdateMemoryPatch): Partial<MemoryValues> {
  requireUpdate(id, patch)
  const set: Partial<MemoryValues> = {}
  if (patch.text !== undefined) set.text = prepareText(patch.text, 'text', limits.memory).text
  if (patch.kind !== undefined) set.kind = prepareLabel(patch.kind, 'kind', limits.label)
  if (patch.priority !== undefined) set.priority = requireFinite(patch.priority, 'priority')
  if (patch.flags !== undefined) set.flags = flagsObject(patch.flags)
  const embedding = embeddingValue(patch.embedding)
  if (embedding !== undefined) {
    set.embedding = embedding ? embeddingToBuffer(embedding) : null
    set.embeddingDims = embedding ? embedding.length : null
    if (!embedding) set.embeddingModel = null
  }
  if (patch.embeddingModel !== undefined) {
    set.embeddingModel = patch.embeddingModel === null ? null : prepareLabel(patch.embeddingModel, 'embeddingModel', limits.label)
  }
  return set
}

/** Whether a memory patch alters what the memory's layer holds: an embedding is derived data, attaching one does not. */
export function memoryPatchChangesLayer(set: object): boolean {
  return Object.keys(set).some((key) => key !== 'embedding' && key !== 'embeddingDims' && key !== 'embeddingModel')
}

/** The fields of an existing memory that `supersede` inherits. */
export interface SupersededFields {
  kind: string
  scope: Scope
  workspace: string | null
  sessionId: string | null
  priority: number
  flags: Flags
}

/** The checked `supersede` input (call before the write; the merge with the old row happens inside it). */
export function supersedeArgsOf(oldId: string, input: unknown): void {
  requireId(oldId, 'oldId')
  if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'input must be an object')
}

/**
 * The new version's input: what `input` gives, the rest inherited from the old version
 * (a new scope drops the old placement; source messages and embedding are never inherited).
 */
export function supersedingInputOf(old: SupersededFields, input: Partial<AddMemoryInput> & { text: string }): AddMemoryInput {
  return {
    kind: input.kind ?? old.kind,
    scope: input.scope ?? old.scope,
    workspace: input.scope === undefined && input.workspace === undefined ? old.workspace : input.workspace,
    sessionId: input.scope === undefined && input.sessionId === undefined ? old.sessionId : input.sessionId,
    priority: input.priority ?? old.priority,
    flags: input.flags ?? old.flags,
    text: input.text,
    sourceMessageIds: input.sourceMessageIds ?? [],
    embedding: input.embedding,
    embeddingModel: input.embeddingModel,
    createdAt: input.createdAt,
  }
}

/** Refuse to supersede (or merge) a version that is no longer the newest. */
export function assertNewest<M extends { supersededBy: string | null }>(memory: M | undefined, id: string, role: 'supersede' | 'target' | 'source'): asserts memory is M {
  if (!memory) throw new MemoryStoreError('not-found', `memory ${id} does not exist`)
  if (!memory.supersededBy) return
  const hint = role === 'supersede' ? '; supersede the newest version' : role === 'target' ? '; merge into the newest version' : ''
  throw new MemoryStoreError('conflict', `memory ${id} is already superseded by ${memory.supersededBy}${hint}`)
}

/** The checked arguments of `mergeInto`: the distinct source ids, never the target itself. */
export function mergeArgsOf(targetId: string, sourceIds: readonly string[]): string[] {
  requireId(targetId, 'targetId')
  const sources = [...new Set(idList(sourceIds, 'sourceIds'))]
  if (sources.includes(targetId)) throw new MemoryStoreError('invalid-argument', 'a memory cannot be merged into itself')
  return sources
}

/** The target's source messages after a merge: its own, then each source's, once each. */
export function mergedSourceIds(target: { sourceMessageIds: string[] }, sources: readonly { sourceMessageIds: string[] }[]): string[] {
  return [...new Set([...target.sourceMessageIds, ...sources.flatMap((row) => row.sourceMessageIds)])]
}

/** Scene columns derived from input (all but id, revision and times). */
export type SceneValues = Omit<Scene, 'id' | 'revision' | 'createdAt' | 'updatedAt' | 'createdBy'>

export function sceneValuesOf(limits: TextLimits, input: AddSceneInput): SceneValues {
  if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'scene input must be an object')
  const scope = requireScope(input.scope)
  return {
    title: prepareLabel(input.title, 'title', limits.label),
    summary: prepareText(input.summary, 'summary', limits.scene).text,
    scope,
    ...placementOf(limits, scope, input.workspace, input.sessionId),
    memoryIds: idList(input.memoryIds, 'memoryIds'),
    flags: flagsObject(input.flags),
  }
}

/** The checked columns of `scenes.update` (empty: nothing to change). */
export function scenePatchOf(limits: TextLimits, id: string, patch: UpdateScenePatch): Partial<SceneValues> {
  requireUpdate(id, patch)
  const set: Partial<SceneValues> = {}
  if (patch.title !== undefined) set.title = prepareLabel(patch.title, 'title', limits.label)
  if (patch.summary !== undefined) set.summary = prepareText(patch.summary, 'summary', limits.scene).text
  if (patch.memoryIds !== undefined) set.memoryIds = idList(patch.memoryIds, 'memoryIds')
  if (patch.flags !== undefined) set.flags = flagsObject(patch.flags)
  return set
}

/** The row key of a persona document (`''` is the global persona's workspace). */
export function personaKeyOf(limits: TextLimits, key: PersonaKey): { scope: 'global' | 'workspace'; workspace: string } {
  if (!key || typeof key !== 'object') throw new MemoryStoreError('invalid-argument', 'persona key must be an object')
  if (key.scope === 'global') {
    if (key.workspace !== undefined && key.workspace !== null && key.workspace !== '') {
      throw new MemoryStoreError('invalid-argument', 'the global persona has no workspace')
    }
    return { scope: 'global', workspace: '' }
  }
  if (key.scope === 'workspace') {
    return { scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', limits.label) }
  }
  throw new MemoryStoreError('invalid-argument', `persona scope must be 'global' or 'workspace', got ${JSON.stringify(key.scope)}`)
}

/** The audit/change-log id of a persona document. */
export function personaEntityId(key: { scope: string; workspace: string; owner?: string }): string {
  if (key.scope !== 'global') return `workspace:${key.workspace}`
  return key.owner ? `global:${key.owner}` : 'global'
}

/** The stored key of a persona row: a global persona is one user's (`owner`, `''` = unattributed); a workspace's has owner `''`. */
export interface PersonaRowKey {
  scope: 'global' | 'workspace'
  workspace: string
  owner: string
}

/** The `owner` key column of a persona written by `user`: the user for a global persona, `''` for a workspace's (the team's). */
export function personaOwnerOf(scope: 'global' | 'workspace', user: string): string {
  return scope === 'global' ? user : ''
}

/** `conflict` unless the persona is at the version the caller expects (`undefined`: any). */
export function assertPersonaVersion(key: { scope: string; workspace: string; owner?: string }, current: number, expected: number | undefined): void {
  if (expected !== undefined && expected !== current) {
    throw new MemoryStoreError('conflict', `persona ${personaEntityId(key)} is at version ${current}, not ${expected}`)
  }
}
