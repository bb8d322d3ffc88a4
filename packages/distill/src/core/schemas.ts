/**
 * The shapes the model must reply with, validated with zod, plus the semantic checks zod
 * cannot do (every id the model names must be one we showed it). Model output is untrusted
 * data: it is length-capped, its ids are checked, and nothing in it is ever executed.
 * Every text the model returns is redacted (the store's `redactSecrets`) right here, before it
 * is used anywhere: the store would redact it on write anyway, but a candidate is also shown
 * to the model again (the dedup prompt), and a secret must not travel back to the provider.
 */
import { redactSecrets } from '@dsh-memory/store'
import { z } from 'zod'

/** Memory kinds the extractor may produce. */
export const MEMORY_KINDS = ['fact', 'preference', 'instruction', 'episode'] as const
/** One of {@link MEMORY_KINDS}. */
export type ExtractedKind = (typeof MEMORY_KINDS)[number]
/** Scope suggestions the extractor may make. */
export const MEMORY_SCOPES = ['global', 'workspace', 'session'] as const
/** One of {@link MEMORY_SCOPES}. */
export type SuggestedScope = (typeof MEMORY_SCOPES)[number]

/** Longest memory text accepted from the model; longer items are rejected, not cut. */
export const MAX_MEMORY_TEXT = 600
/** Most memories accepted from one extraction reply. */
export const MAX_MEMORIES_PER_REPLY = 60
/** Longest scene title / summary accepted from the model. */
export const MAX_SCENE_TITLE = 120
export const MAX_SCENE_SUMMARY = 2_000
/** Longest persona document accepted from the model (characters). */
export const MAX_PERSONA_CHARS = 6_000

/** Model-written text with every recognised secret replaced by `[REDACTED:<kind>]`. */
const redacted = (value: string): string => redactSecrets(value).text

const alias = z
  .string()
  .trim()
  .transform((value) => value.replace(/^\[|\]$/g, '').trim().toLowerCase())

const extractedMemorySchema = z.object({
  kind: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(MEMORY_KINDS)),
  text: z.string().trim().min(1).max(MAX_MEMORY_TEXT).transform(redacted),
  scope: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(MEMORY_SCOPES))
    .default('workspace'),
  priority: z
    .number()
    .finite()
    .min(1)
    .max(5)
    .transform((value) => Math.round(value))
    .default(3),
  src: z.array(alias).min(1).max(200),
})

const extractionSchema = z.object({ memories: z.array(z.unknown()).max(MAX_MEMORIES_PER_REPLY) }).transform((reply) => reply.memories)

/** A validated L1 candidate, its sources mapped back to store message ids. */
export interface ExtractedMemory {
  readonly kind: ExtractedKind
  readonly text: string
  readonly scope: SuggestedScope
  readonly priority: number
  readonly sourceMessageIds: readonly string[]
}

/** An item dropped from a reply, with the reason (for logs). */
export interface RejectedItem {
  readonly index: number
  readonly reason: string
}

/** Result of a validation: accepted items plus what was dropped, or a reply-level failure. */
export type Validated<T> =
  | { readonly ok: true; readonly items: readonly T[]; readonly rejected: readonly RejectedItem[] }
  | { readonly ok: false; readonly error: string }

/**
 * Validate an extraction reply `{"memories": [...]}`. Items with a bad kind, empty or
 * over-long text, or a source id that is not one of the slice's new messages are dropped;
 * a reply that is not that object at all, or whose every item is bad, is invalid.
 * @param aliases - alias shown to the model (e.g. `m1`) → store message id; only new messages.
 */
export function validateExtraction(value: unknown, aliases: ReadonlyMap<string, string>): Validated<ExtractedMemory> {
  const seen = new Set<string>()
  const result = validateItems('extraction reply', extractionSchema.safeParse(value), extractedMemorySchema, (memory): ExtractedMemory | Rejection => {
    const ids: string[] = []
    for (const source of memory.src) {
      const id = aliases.get(source)
      if (!id) return reject(`unknown source id ${JSON.stringify(source).slice(0, 40)}`)
      if (!ids.includes(id)) ids.push(id)
    }
    const key = normalizeForCompare(memory.text)
    if (seen.has(key)) return reject('duplicate of an earlier item')
    seen.add(key)
    return { kind: memory.kind, text: memory.text, scope: memory.scope, priority: memory.priority, sourceMessageIds: ids }
  })
  if (result.ok && result.items.length === 0 && result.rejected.length > 0) {
    return { ok: false, error: `extraction reply: every item was invalid (${result.rejected[0]!.reason})` }
  }
  return result
}

/** What to do with one new memory relative to the existing ones. */
export const DEDUP_ACTIONS = ['add', 'skip', 'update', 'merge', 'supersede'] as const
/** One of {@link DEDUP_ACTIONS}. */
export type DedupAction = (typeof DEDUP_ACTIONS)[number]

const decisionSchema = z.object({
  id: alias,
  action: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.enum(DEDUP_ACTIONS)),
  target: alias.optional(),
  text: z.string().trim().min(1).max(MAX_MEMORY_TEXT).transform(redacted).optional(),
})

const decisionsSchema = z.object({ decisions: z.array(z.unknown()).max(MAX_MEMORIES_PER_REPLY * 2) }).transform((reply) => reply.decisions)

/** A validated dedup decision, in aliases (the caller maps them back). */
export interface DedupDecision {
  /** Candidate alias, e.g. `n1`. */
  readonly id: string
  readonly action: DedupAction
  /** Existing-memory alias (e.g. `e2`) for update / merge / supersede. */
  readonly target?: string
  /** The merged text for update / merge. */
  readonly text?: string
}

/**
 * Validate a dedup reply `{"decisions": [...]}` against what the model was shown: the
 * candidate must exist, and a target must be one of the existing memories listed under
 * that candidate. update/merge need a merged text. Invalid items are dropped (the caller
 * then adds that candidate as new, so nothing is lost); the first decision per id wins.
 * @param pools - candidate alias → aliases of the existing memories shown with it.
 */
export function validateDedupDecisions(value: unknown, pools: ReadonlyMap<string, ReadonlySet<string>>): Validated<DedupDecision> {
  const decided = new Set<string>()
  return validateItems('dedup reply', decisionsSchema.safeParse(value), decisionSchema, ({ id, action, target, text }): DedupDecision | Rejection => {
    const pool = pools.get(id)
    if (!pool) return reject(`unknown candidate ${JSON.stringify(id).slice(0, 40)}`)
    if (decided.has(id)) return reject(`second decision for ${id}`)
    if (action === 'update' || action === 'merge' || action === 'supersede') {
      if (!target || !pool.has(target)) return reject(`${action} of ${id} needs a target listed under it`)
      if (action !== 'supersede' && !text) return reject(`${action} of ${id} needs the merged text`)
    }
    decided.add(id)
    // A skip may name what it duplicates (kept for provenance) when that target was shown.
    const keepTarget = target !== undefined && action !== 'add' && pool.has(target)
    return { id, action, ...(keepTarget ? { target } : {}), ...(text && (action === 'update' || action === 'merge') ? { text } : {}) }
  })
}

/** L2 scene operations the model may return. */
export type SceneOp =
  | { readonly op: 'create'; readonly title: string; readonly summary: string; readonly memories: readonly string[] }
  | { readonly op: 'update'; readonly scene: string; readonly title?: string; readonly summary?: string; readonly memories: readonly string[] }
  | { readonly op: 'merge'; readonly scenes: readonly string[]; readonly title: string; readonly summary: string; readonly memories: readonly string[] }
  | { readonly op: 'delete'; readonly scene: string }

const title = z.string().trim().min(1).max(MAX_SCENE_TITLE).transform(redacted)
const summary = z.string().trim().min(1).max(MAX_SCENE_SUMMARY).transform(redacted)
const refs = z.array(alias).max(200).default([])
const sceneOpSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('create'), title, summary, memories: refs }),
  z.object({ op: z.literal('update'), scene: alias, title: title.optional(), summary: summary.optional(), memories: refs }),
  z.object({ op: z.literal('merge'), scenes: z.array(alias).min(2).max(20), title, summary, memories: refs }),
  z.object({ op: z.literal('delete'), scene: alias }),
])
const sceneOpsSchema = z.object({ ops: z.array(z.unknown()).max(100) }).transform((reply) => reply.ops)

/**
 * Validate an L2 reply `{"ops": [...]}`: scene aliases must be scenes we showed in full,
 * memory aliases must be new memories we listed; a scene is touched by at most one op.
 * Bad ops are dropped. The cap on scene count is enforced when applying.
 * @param sceneAliases - scenes shown with their full summary (alias → scene id).
 * @param memoryAliases - new memories listed (alias → memory id).
 */
export function validateSceneOps(
  value: unknown,
  sceneAliases: ReadonlyMap<string, string>,
  memoryAliases: ReadonlyMap<string, string>,
): Validated<SceneOp> {
  const touched = new Set<string>()
  return validateItems('scene reply', sceneOpsSchema.safeParse(value), sceneOpSchema, (op): SceneOp | Rejection => {
    const scenes = op.op === 'merge' ? op.scenes : op.op === 'create' ? [] : [op.scene]
    for (const scene of scenes) {
      if (!sceneAliases.has(scene)) return reject(`unknown scene ${JSON.stringify(scene).slice(0, 40)}`)
      if (touched.has(scene)) return reject(`scene ${scene} is already changed by an earlier op`)
    }
    if (new Set(scenes).size !== scenes.length) return reject('a scene is listed twice')
    const memories = 'memories' in op ? op.memories : []
    for (const memory of memories) {
      if (!memoryAliases.has(memory)) return reject(`unknown memory ${JSON.stringify(memory).slice(0, 40)}`)
    }
    if (op.op === 'update' && op.title === undefined && op.summary === undefined && memories.length === 0) return reject('update changes nothing')
    for (const scene of scenes) touched.add(scene)
    return op.op === 'delete' ? op : { ...op, memories: [...new Set(memories)] }
  })
}

/**
 * Normalise a persona reply: drop a wrapping code fence, trim, refuse empty or JSON-looking
 * text, cap the length at a paragraph boundary.
 */
export function validatePersonaText(text: string): { ok: true; text: string } | { ok: false; error: string } {
  let body = typeof text === 'string' ? text.trim() : ''
  const fence = /^```[A-Za-z0-9_-]*[^\S\n]*\n([\s\S]*?)\n?```$/.exec(body)
  if (fence) body = fence[1]!.trim()
  if (!body) return { ok: false, error: 'persona reply is empty' }
  if (/^[[{]/.test(body) && /[\]}]$/.test(body)) return { ok: false, error: 'persona reply is JSON, expected markdown' }
  if (body.length > MAX_PERSONA_CHARS) {
    const cut = body.lastIndexOf('\n\n', MAX_PERSONA_CHARS)
    body = body.slice(0, cut > MAX_PERSONA_CHARS / 2 ? cut : MAX_PERSONA_CHARS).trimEnd()
  }
  return { ok: true, text: redacted(body) }
}

/** Case-, width- and whitespace-insensitive form of a text, for exact-duplicate checks. */
export function normalizeForCompare(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\p{P}]+/gu, ' ')
    .trim()
}

/** Why a check dropped an item; a class, so it cannot be mistaken for an accepted item. */
class Rejection {
  constructor(readonly reason: string) {}
}

function reject(reason: string): Rejection {
  return new Rejection(reason)
}

/**
 * The frame every list reply shares: a reply that is not the expected object fails as a whole
 * (`label: path: issue`); each item is parsed with `item`, then `check` accepts it (returning
 * the accepted value) or drops it with a reason. Items are checked in order, so a check may
 * remember earlier ones (first decision wins, one op per scene).
 */
function validateItems<Item, T>(
  label: string,
  reply: z.ZodSafeParseResult<readonly unknown[]>,
  item: z.ZodType<Item>,
  check: (item: Item) => T | Rejection,
): Validated<T> {
  if (!reply.success) return { ok: false, error: `${label}: ${summarizeZod(reply.error)}` }
  const items: T[] = []
  const rejected: RejectedItem[] = []
  reply.data.forEach((raw, index) => {
    const parsed = item.safeParse(raw)
    const result = parsed.success ? check(parsed.data) : reject(summarizeZod(parsed.error))
    if (result instanceof Rejection) rejected.push({ index, reason: result.reason })
    else items.push(result)
  })
  return { ok: true, items, rejected }
}

function summarizeZod(error: z.ZodError): string {
  const issue = error.issues[0]
  if (!issue) return 'invalid'
  const path = issue.path.length ? issue.path.join('.') : '(root)'
  return `${path}: ${issue.message}`.slice(0, 200)
}
