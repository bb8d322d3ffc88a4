/**
 * `@dsh-memory/store`: the shared storage core of dsh-memory, usable as a plain library.
 * Nothing here imports DSH; the Cordis service lives in `@dsh-memory/store/plugin`.
 *
 * @module @dsh-memory/store
 */
export { openMemoryStore } from './core/sqlite-store.ts'
export type {
  PackageAuditEntry,
  PackageDatabase,
  PackageRunResult,
  PackageTables,
  PackageTablesDeclaration,
  PackageTablesHost,
  PackageWriteOptions,
} from './core/package-tables.ts'
export { schemaDrift } from './core/schema-drift.ts'
export { ActivityLog, formatActivityLine, MAX_CODE_CHARS } from './core/activity-log.ts'
export type { ActivityLogOptions, ActivityValue } from './core/activity-log.ts'
export { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_CACHE_MIB, resolveDataDir } from './core/options.ts'
export type { MemoryStoreOptions } from './core/options.ts'
export { isMemoryStoreError, MemoryStoreError } from './core/errors.ts'
export type { MemoryStoreErrorCode } from './core/errors.ts'
export { loadMigrationDir, migrationChecksum } from './core/migrations.ts'
export { ENGLISH_STOP_WORDS, tokenize, TOKENIZER_VERSION } from './core/tokenizer.ts'
export { redactionMarker, redactSecrets } from './core/redact.ts'
export type { RedactionResult, SecretKind } from './core/redact.ts'
export { DEFAULT_TEXT_LIMITS, estimateTokens } from './core/text.ts'
export type { TextLimits } from './core/text.ts'
export { EXPORT_FORMAT, EXPORT_VERSION } from './core/export-format.ts'
export { coordinatedStore, isCoordinatedStore, layerKeyOf, layerKeyOfRow, parseLayerKey } from './core/layers.ts'
export { holdLease, isLocalHolderGone, leaseHolderId } from './core/lease-keeper.ts'
export {
  cosineSimilarity,
  createEmbeddingClient,
  DEFAULT_EMBEDDING_CLIENT_OPTIONS,
  EmbeddingError,
  embeddingModelKey,
  isEmbeddingError,
  resolveEmbeddingClientOptions,
} from './core/embedding.ts'
export type { EmbeddingClient, EmbeddingClientDependencies, EmbeddingClientInput, EmbeddingClientOptions, EmbeddingErrorCode } from './core/embedding.ts'
export type { HeldLease, HoldLeaseOptions } from './core/lease-keeper.ts'
export type {
  AcquireLeaseOptions,
  AddMemoryInput,
  AddSceneInput,
  AppendMessageInput,
  AppendMessageResult,
  AppliedMigration,
  AuditEntry,
  AuditFilter,
  AuditLog,
  AuditOp,
  Conversation,
  ConversationFilter,
  CoordinatedMemoryStore,
  ConversationRepository,
  EnsureConversationInput,
  EntityName,
  Flags,
  ImportResult,
  IndexBuildReason,
  LayerKey,
  LayerRepository,
  LayerRevision,
  Lease,
  LeaseFence,
  LeaseRepository,
  Memory,
  MemoryFilter,
  MemoryHit,
  MemoryKind,
  MemoryRepository,
  MemoryScopeFilter,
  MemorySearchOptions,
  MemoryStore,
  Message,
  MessageFilter,
  MessageHit,
  MessageRepository,
  MessageRole,
  MessageSearchOptions,
  MetaEntry,
  MetaRepository,
  Migration,
  MigrationSet,
  Persona,
  PersonaKey,
  PersonaRepository,
  PutPersonaInput,
  RecordCounts,
  Scene,
  SceneFilter,
  SceneRepository,
  Scope,
  SearchIndexStatus,
  SearchService,
  StoreDiagnostics,
  TransactionOptions,
  UpdateMemoryPatch,
  UpdateScenePatch,
  WriteOptions,
} from './core/types.ts'
