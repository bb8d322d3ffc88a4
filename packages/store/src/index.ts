/**
 * `@dsh-memory/store`: the shared storage core of dsh-memory, usable as a plain library.
 * Nothing here imports DSH; the Cordis service lives in `@dsh-memory/store/plugin`.
 *
 * @module @dsh-memory/store
 */
export { openMemoryStore } from './core/sqlite-store.ts'
export { openPostgresStore, openStore } from './core/open-store.ts'
export { dropPostgresStore } from './core/pg-drop.ts'
export { CHANGES_CHANNEL } from './core/change-spec.ts'
export type { ChangeFeed, StoreChange, StoreChangeEvent, StoreChangeListener } from './core/types-changes.ts'
export type {
  PackageAuditEntry,
  PackageDatabase,
  PackageDialect,
  PackageRunResult,
  PackageTables,
  PackageTablesDeclaration,
  PackageTablesHost,
  PackageWriteOptions,
  WorkspaceKeyColumn,
} from './core/package-tables.ts'
export { packageDeclaration, packageMigrations, sqlGreatest } from './core/package-declaration.ts'
export type { PackageDeclarationOptions, PackageMigrationRoot } from './core/package-declaration.ts'
export { GIT_WORKSPACE_PREFIX, isGitWorkspace, normalizeRemoteUrl, WORKSPACE_IDENTITIES, workspaceOf } from './core/workspace-id.ts'
export type { WorkspaceIdentity, WorkspaceOfOptions } from './core/workspace-id.ts'
export { carryOverStoreWorkspaces, carryOverWorkspaces, STORE_WORKSPACE_KEYS, WorkspaceCarryOver } from './core/workspace-carry-over.ts'
export type { CarryOverReports, WorkspaceMove } from './core/workspace-carry-over.ts'
export { schemaDrift } from './core/schema-drift.ts'
export { openStoreMaintenance } from './core/sqlite-maintenance.ts'
export type { ForeignKeyViolation, SceneOrphans, StoreMaintenance, StoreMaintenanceOptions } from './core/sqlite-maintenance.ts'
export { ActivityLog, formatActivityLine, MAX_CODE_CHARS } from './core/activity-log.ts'
export type { ActivityLogOptions, ActivityValue } from './core/activity-log.ts'
export { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_CACHE_MIB, DEFAULT_CHANGE_POLL_MS, DEFAULT_POSTGRES_SCHEMA, resolveDataDir } from './core/options.ts'
export type { MemoryStoreOptions, PostgresStoreOptions } from './core/options.ts'
export { checkPostgresSchema } from './core/options.ts'
export { isMemoryStoreError, MemoryStoreError } from './core/errors.ts'
export type { MemoryStoreErrorCode } from './core/errors.ts'
export { findPackageMigrations, loadMigrationDir, migrationChecksum } from './core/migrations.ts'
export { ENGLISH_STOP_WORDS, foldScript, normalizeTerm, searchTokenize, tokenize, TOKENIZER_VERSION } from './core/tokenizer.ts'
export { redactionMarker, redactSecrets } from './core/redact.ts'
export type { RedactionResult, SecretKind } from './core/redact.ts'
export { DEFAULT_TEXT_LIMITS, estimateTokens } from './core/text.ts'
export type { TextLimits } from './core/text.ts'
export { EXPORT_FORMAT, EXPORT_VERSION } from './core/export-format.ts'
export { coordinatedStore, globalLayerKey, isCoordinatedStore, layerKeyOf, layerKeyOfRow, parseLayerKey } from './core/layers.ts'
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
export type { EntityName, Flags, LeaseFence, MemoryKind, MessageRole, PageOptions, Scope, TransactionOptions, WriteOptions } from './core/types-common.ts'
export type {
  AppendMessageInput,
  AppendMessageResult,
  Conversation,
  ConversationFilter,
  ConversationRepository,
  DeleteEmbeddingsFilter,
  EnsureConversationInput,
  Message,
  MessageEmbedding,
  MessageFilter,
  MessageRepository,
  MessageVectorKey,
  MessageVectorPage,
  MissingEmbeddingsFilter,
} from './core/types-conversations.ts'
export type { AcquireLeaseOptions, LayerKey, LayerRepository, LayerRevision, Lease, LeaseRepository } from './core/types-coordination.ts'
export type { AddMemoryInput, Memory, MemoryFilter, MemoryRepository, MemoryScopeFilter, UpdateMemoryPatch } from './core/types-memories.ts'
export type { AppliedMigration, AuditEntry, AuditFilter, AuditLog, AuditOp, MetaEntry, MetaRepository, Migration, MigrationSet, StoreDiagnostics } from './core/types-meta.ts'
export type { Persona, PersonaKey, PersonaRepository, PutPersonaInput } from './core/types-persona.ts'
export type { AddSceneInput, Scene, SceneFilter, SceneRepository, UpdateScenePatch } from './core/types-scenes.ts'
export type { IndexBuildReason, MemoryHit, MemorySearchOptions, MessageHit, MessageSearchOptions, SearchIndexStatus, SearchService } from './core/types-search.ts'
export type { DayCounts, StatsService, StoreCounts, WorkspaceCounts } from './core/types-stats.ts'
export type { CoordinatedMemoryStore, CopiedAuditEntry, ImportOptions, ImportResult, MemoryStore, OpenedMemoryStore, RecordCounts, TransferService } from './core/types-store.ts'
export { defaultUser, MAX_USER_CHARS, requireUser, resolveUser } from './core/user.ts'
export type { ResolvedUser, UserSource } from './core/user.ts'
export { matchesScope, visibleTo } from './core/scope-filter.ts'
export type { ScopedFields } from './core/scope-filter.ts'
