/** L0 of the store contract: conversations (host sessions) and their messages. */
import type { Flags, MessageRole, PageOptions, WriteOptions } from './types-common.ts'

/** A host session, the container of L0 messages. */
export interface Conversation {
  /** The host's session id. */
  id: string
  /** The session's working directory; `''` when unknown. */
  workspace: string
  title: string | null
  startedAt: number
  endedAt: number | null
  updatedAt: number
  flags: Flags
  /** The user whose session wrote it (see `MemoryStoreOptions.user`); `''` for rows from before user identities. */
  createdBy: string
}

/** Input of {@link ConversationRepository.ensure}. */
export interface EnsureConversationInput {
  id: string
  /** The session's working directory. An empty value never overwrites a known workspace. */
  workspace: string
  /** Set when given and non-empty; an existing title is replaced. */
  title?: string
  /** Defaults to the store clock; ignored when the conversation already exists. */
  startedAt?: number
}

/** Filter of {@link ConversationRepository.list}. */
export interface ConversationFilter extends PageOptions {
  workspace?: string
  /** Only conversations updated at or after this epoch-ms time. */
  since?: number
  /** Only conversations updated at or before this epoch-ms time. */
  until?: number
}

/** L0 container repository. */
export interface ConversationRepository {
  /**
   * Create the conversation or update it in place (idempotent upsert). An existing
   * workspace is only replaced by a non-empty one; `startedAt` of an existing row is kept.
   * @returns `created` is true when the row did not exist before.
   */
  ensure(input: EnsureConversationInput, options?: WriteOptions): Promise<{ created: boolean; conversation: Conversation }>
  /** The conversation, or `undefined`. */
  get(id: string): Promise<Conversation | undefined>
  /** Conversations, most recently updated first. */
  list(filter?: ConversationFilter): Promise<Conversation[]>
  /**
   * Mark the conversation ended at `at` (default: now).
   * @throws MemoryStoreError `not-found`
   */
  end(id: string, at?: number, options?: WriteOptions): Promise<Conversation>
  /**
   * Hard-delete the conversation and all its messages (audited, without content).
   * @returns false when it did not exist.
   */
  delete(id: string, options?: WriteOptions): Promise<boolean>
}

/** An L0 message: one user or assistant utterance, verbatim after redaction. */
export interface Message {
  /** Store id (UUIDv7, time-sortable). */
  id: string
  conversationId: string
  /** The host's id for this message; unique per conversation, the idempotency key of `append`. */
  hostMessageId: string
  role: MessageRole
  /** Text after control-character stripping, secret redaction and the length cap. */
  text: string
  /** The host turn number the message belongs to. */
  turn: number
  /** Position in the conversation; assigned as last+1 when not given. */
  seq: number
  /** Host event ids (or other provenance) this message was assembled from. */
  sourceIds: string[]
  tokensEstimate: number
  createdAt: number
  flags: Flags
  /** The user whose session wrote it (see `MemoryStoreOptions.user`); `''` for rows from before user identities. */
  createdBy: string
}

/** Input of {@link MessageRepository.append}. */
export interface AppendMessageInput {
  conversationId: string
  hostMessageId: string
  role: MessageRole
  text: string
  turn?: number
  seq?: number
  sourceIds?: string[]
  /** Defaults to {@link estimateTokens} of the stored text. */
  tokensEstimate?: number
  /** Defaults to the store clock. */
  createdAt?: number
  flags?: Flags
}

/** Result of {@link MessageRepository.append}. */
export interface AppendMessageResult {
  /** False when a message with the same (conversationId, hostMessageId) already existed. */
  inserted: boolean
  /** The stored message (the existing one when `inserted` is false). */
  message: Message
  /** Number of secrets replaced in this call's text (0 when not inserted). */
  redactions: number
}

/** Filter of {@link MessageRepository.list}. */
export interface MessageFilter extends PageOptions {
  conversationId?: string
  workspace?: string
  role?: MessageRole
  since?: number
  until?: number
  /** Only messages with `seq` greater than this (within `conversationId`). */
  afterSeq?: number
  /** Default `'asc'` (conversation order, then creation time). */
  order?: 'asc' | 'desc'
}

/** A vector of one message, made by one model (derived data, like a memory's embedding). */
export interface MessageEmbedding {
  readonly messageId: string
  readonly embedding: Float32Array
  /** Identifies the model (`model@dimensions`, recall's embedder `modelKey`). */
  readonly embeddingModel: string
}

/** The key of a message vector: its message and its model. */
export interface MessageVectorKey {
  readonly messageId: string
  readonly embeddingModel: string
}

/** A page of `transfer.messageVectors`: the vectors after `after` (the last of the previous page), at most `limit`. */
export interface MessageVectorPage {
  readonly after?: MessageVectorKey
  /** 1..1 000. */
  readonly limit: number
}

/** Filter of {@link MessageRepository.missingEmbeddings}. */
export interface MissingEmbeddingsFilter {
  /** The model whose vectors count: a message without a vector of it is missing, whatever other models' it has. */
  readonly model: string
  /** 1..1 000. */
  readonly limit: number
  readonly workspace?: string
  readonly conversationId?: string
  /** Only messages created at or after this epoch-ms time. */
  readonly since?: number
  /** Only messages created at or before this epoch-ms time. */
  readonly until?: number
}

/**
 * Filter of {@link MessageRepository.deleteEmbeddings}: exactly one of `model` (that model's
 * vectors) and `exceptModel` (every other model's), optionally only the messages of one workspace.
 */
export interface DeleteEmbeddingsFilter {
  readonly model?: string
  readonly exceptModel?: string
  readonly workspace?: string
}

/** L0 message repository. */
export interface MessageRepository {
  /**
   * Store a message once. Appending the same (conversationId, hostMessageId) again returns
   * the existing message with `inserted: false` and writes nothing.
   * @throws MemoryStoreError `not-found` when the conversation does not exist (call `conversations.ensure` first)
   * @throws MemoryStoreError `invalid-argument` for empty text or an unknown role
   */
  append(input: AppendMessageInput, options?: WriteOptions): Promise<AppendMessageResult>
  get(id: string): Promise<Message | undefined>
  getByHostId(conversationId: string, hostMessageId: string): Promise<Message | undefined>
  list(filter?: MessageFilter): Promise<Message[]>
  /**
   * Each given message with the `span` messages before it and the `span` after it in its own
   * conversation's order (seq, then id), whatever the seq numbers: the host numbers every
   * event, so a conversation's stored seqs have gaps. Distinct messages, ordered by
   * conversation, seq, id. Unknown ids are ignored. Recall reads a search hit's context turns
   * with it in one query.
   * @param ids - at most 1 000. @param span - 0..20.
   */
  around(ids: readonly string[], span: number): Promise<Message[]>
  /** How many messages match (workspace, conversation, role and time filters; no paging). */
  count(filter?: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'>): Promise<number>
  /** Hard-delete one message (audited). @returns false when it did not exist. */
  delete(id: string, options?: WriteOptions): Promise<boolean>
  /**
   * Vectors of `model` of the given messages; a message without one (or with another model's) is absent.
   * Unknown ids are ignored. @param ids - at most 1 000 (more: MemoryStoreError `invalid-argument`)
   */
  embeddings(ids: readonly string[], model: string): Promise<Map<string, Float32Array>>
  /**
   * Attach vectors, one per (message, model): a new vector replaces only the same model's vector of its message,
   * another model's stays. Derived data: no revision, no change-log entry, no audit row. Unknown (e.g. deleted
   * meanwhile) message ids are skipped. When one call names a (message, model) twice, its last entry wins.
   * Deleting the message (or its conversation) deletes all its vectors.
   * @returns how many were written. @throws MemoryStoreError `invalid-argument` for an empty/non-finite vector,
   *   an empty model, or more than 1 000 entries
   */
  setEmbeddings(entries: readonly MessageEmbedding[]): Promise<number>
  /**
   * Messages lacking a vector of `model` (another model's vector neither counts nor hides one), newest first (createdAt, then id, descending),
   * at most `limit` (1..1 000); filtered like `list` by workspace / conversationId / since / until when given.
   * Recall's background backfill and `dsh-memory reembed` walk it. It reads the filter's messages newest first
   * until it has `limit` of them: when fewer are missing, it reads them all (bound it with `since`).
   */
  missingEmbeddings(filter: MissingEmbeddingsFilter): Promise<Message[]>
  /**
   * Drop message vectors: those of `filter.model`, or those of every model but `filter.exceptModel` (the vectors
   * of an embedder nobody uses any more stay until dropped), of every message or only of `filter.workspace`'s.
   * Derived data, like `setEmbeddings`: no change-log entry, no audit row.
   * @returns how many vectors were deleted. @throws MemoryStoreError `invalid-argument` naming the field when
   *   neither or both of `model` and `exceptModel` are given, one is empty, or `workspace` is not a string;
   *   `readonly` on a read-only store
   */
  deleteEmbeddings(filter: DeleteEmbeddingsFilter): Promise<number>
}
