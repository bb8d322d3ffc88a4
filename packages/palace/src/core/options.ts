import { z } from 'zod'
import { PalaceError } from './errors.js'

/** How strongly the model is guided to read the archive back. */
export type RecallStrength = 'off' | 'low' | 'medium' | 'high' | 'forced'

/** Every recall strength, weakest first. */
export const RECALL_STRENGTHS: readonly RecallStrength[] = Object.freeze(['off', 'low', 'medium', 'high', 'forced'])

/**
 * The settings a workspace default (`memory-palace/config.json`) or one session
 * (`memory-palace/<name>/config.json`) may override. Layering: plugin config, then workspace,
 * then session; the last layer that sets a field wins.
 */
export interface PalaceSettings {
  /** Master switch: when false nothing is archived, steered or injected. */
  readonly enabled: boolean
  /** Pressure gate: estimated history ÷ context window must reach this ratio. */
  readonly triggerPressure: number
  /** Share of the context window kept verbatim in context and never proposed for archiving (0.02–0.5). */
  readonly retainFraction: number
  /** Batch gate fallback: archivable text of at least this share of the retained budget opens the gate. */
  readonly batchByteFraction: number
  /** Batch gate: this many archivable turns open the gate. */
  readonly minBatchTurns: number
  /** Evaluate the gates once every this many new turns. */
  readonly checkEveryTurns: number
  /** Largest volume file in bytes (decimal: 5 000 000 = 5.0 MB); a larger archive starts a new volume. */
  readonly maxFileBytes: number
  /** File-name prefix of volume files (not the memory name). */
  readonly selfNameSlug: string
  /** Archive the model's reasoning text too. */
  readonly includeReasoning: boolean
  /** Ask the host to compact the archived span right after a model-driven archive. */
  readonly compactAfterArchive: boolean
  /** Inject the steering note that asks the model to archive when both gates hold. */
  readonly enableSteer: boolean
  /** Master switch of every injected note (steering, forced recall, post-compaction guidance); the system-prompt guidance is governed by `recallStrength`. */
  readonly injectNotice: boolean
  /** How strongly the model is guided to read the archive back. */
  readonly recallStrength: RecallStrength
  /** Default number of turns `palace_search` returns when grouping by turn (1–30). */
  readonly searchTurnLimit: number
  /** Suggested maximum search rounds per question at recall strength `high`/`forced`. */
  readonly recallBudgetRounds: number
  /** Suggested maximum keywords per search at recall strength `high`/`forced`. */
  readonly recallBudgetKeywords: number
  /** Archive the turns a compaction is about to drop before its summary request is sent. */
  readonly archiveBeforeCompaction: boolean
  /** Category of turns archived automatically before a compaction. */
  readonly autoArchiveCategory: string
  /**
   * Give a session that was never named an automatic memory name (workspace folder + a hash
   * of the session id) when it first archives, so nothing is lost by default. Off restores
   * the reference: an unnamed session archives nothing.
   */
  readonly autoName: boolean
}

/** Options of the whole plugin: the settings defaults plus process-wide fields. */
export interface PalaceOptions extends PalaceSettings {
  /** Name of the palace folder inside the workspace. */
  readonly rootDirName: string
  /** Longest wait for an automatic pre-compaction archive before the summary request goes ahead anyway (ms). */
  readonly archiveTimeoutMs: number
}

/** The reference defaults. */
export const DEFAULT_PALACE_OPTIONS: PalaceOptions = Object.freeze({
  enabled: true,
  triggerPressure: 0.6,
  retainFraction: 0.12,
  batchByteFraction: 0.5,
  minBatchTurns: 10,
  checkEveryTurns: 5,
  maxFileBytes: 5_000_000,
  selfNameSlug: 'assistant',
  rootDirName: 'memory-palace',
  includeReasoning: true,
  compactAfterArchive: false,
  enableSteer: true,
  injectNotice: true,
  recallStrength: 'low',
  searchTurnLimit: 12,
  recallBudgetRounds: 3,
  recallBudgetKeywords: 6,
  archiveBeforeCompaction: true,
  autoArchiveCategory: 'auto',
  autoName: true,
  archiveTimeoutMs: 20_000,
})

/** Keys of {@link PalaceSettings}, in the order the README table and `palace_config` list them. */
export const SETTING_KEYS: readonly (keyof PalaceSettings)[] = Object.freeze([
  'enabled',
  'triggerPressure',
  'retainFraction',
  'batchByteFraction',
  'minBatchTurns',
  'checkEveryTurns',
  'maxFileBytes',
  'selfNameSlug',
  'includeReasoning',
  'compactAfterArchive',
  'enableSteer',
  'injectNotice',
  'recallStrength',
  'searchTurnLimit',
  'recallBudgetRounds',
  'recallBudgetKeywords',
  'archiveBeforeCompaction',
  'autoArchiveCategory',
  'autoName',
])

const SLUG = /^[a-z0-9][a-z0-9-]{0,31}$/
const CATEGORY_SHAPE = /^[\p{L}\p{N}_-](?:[\p{L}\p{N} _-]{0,38}[\p{L}\p{N}_-])?$/u

/**
 * Zod schema of one settings layer (a `config.json` or a `palace_config` set): every field
 * optional, unknown keys rejected so a typo fails loudly instead of being ignored.
 */
export const settingsLayerSchema = z
  .object({
    enabled: z.boolean(),
    triggerPressure: z.number().gt(0).lte(1),
    retainFraction: z.number().gte(0.02).lte(0.5),
    batchByteFraction: z.number().gt(0).lte(10),
    minBatchTurns: z.number().int().gte(1).lte(10_000),
    checkEveryTurns: z.number().int().gte(1).lte(10_000),
    maxFileBytes: z.number().int().gte(10_000).lte(1_000_000_000),
    selfNameSlug: z.string().regex(SLUG, 'lower-case letters, digits and "-", 1–32 characters, starting with a letter or digit'),
    includeReasoning: z.boolean(),
    compactAfterArchive: z.boolean(),
    enableSteer: z.boolean(),
    injectNotice: z.boolean(),
    recallStrength: z.enum(['off', 'low', 'medium', 'high', 'forced']),
    searchTurnLimit: z.number().int().gte(1).lte(30),
    recallBudgetRounds: z.number().int().gte(1).lte(20),
    recallBudgetKeywords: z.number().int().gte(1).lte(50),
    archiveBeforeCompaction: z.boolean(),
    autoArchiveCategory: z.string().regex(CATEGORY_SHAPE, 'a category name (letters, digits, space, "_", "-", ≤ 40)'),
    autoName: z.boolean(),
  })
  .partial()
  .strict()

/** One validated settings layer. */
export type SettingsLayer = Partial<PalaceSettings>

/**
 * Validate one settings layer.
 * @param where - names the layer in the error (`plugin config`, a file path, `palace_config`).
 * @throws PalaceError `invalid-config` naming the first bad field.
 */
export function parseSettingsLayer(input: unknown, where: string): SettingsLayer {
  const result = settingsLayerSchema.safeParse(input ?? {})
  if (!result.success) {
    const issue = result.error.issues[0]!
    const name =
      issue.path.length > 0 ? issue.path.join('.') : issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : '(root)'
    throw new PalaceError('invalid-config', `${where}: ${name}: ${issue.message}`)
  }
  return result.data as SettingsLayer
}

/** Cross-field rules the per-field schema cannot express. @throws PalaceError `invalid-config` */
function checkCrossFields(settings: PalaceSettings, where: string): void {
  if (settings.retainFraction >= settings.triggerPressure) {
    throw new PalaceError(
      'invalid-config',
      `${where}: retainFraction (${settings.retainFraction}) must be below triggerPressure (${settings.triggerPressure}): the retained tail must fit under the pressure that triggers archiving`,
    )
  }
}

/**
 * Fill defaults and check every rule of the plugin options.
 * @returns a frozen options object.
 * @throws PalaceError `invalid-config` naming the field.
 */
export function resolvePalaceOptions(input: Partial<PalaceOptions> = {}): PalaceOptions {
  const { rootDirName, archiveTimeoutMs, ...layer } = { ...input }
  const settings = { ...DEFAULT_PALACE_OPTIONS, ...parseSettingsLayer(stripUndefined(layer), 'plugin config') }
  const root = rootDirName ?? DEFAULT_PALACE_OPTIONS.rootDirName
  if (typeof root !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(root) || root === '..' || root.includes('..')) {
    throw new PalaceError('invalid-config', `plugin config: rootDirName: must be one plain folder name (letters, digits, "_", "-", "."), got ${JSON.stringify(root)}`)
  }
  const timeout = archiveTimeoutMs ?? DEFAULT_PALACE_OPTIONS.archiveTimeoutMs
  if (!Number.isInteger(timeout) || timeout < 100 || timeout > 600_000) {
    throw new PalaceError('invalid-config', `plugin config: archiveTimeoutMs: must be an integer between 100 and 600000, got ${JSON.stringify(timeout)}`)
  }
  const options: PalaceOptions = { ...settings, rootDirName: root, archiveTimeoutMs: timeout }
  checkCrossFields(options, 'plugin config')
  return Object.freeze(options)
}

/**
 * The effective settings of one session: plugin options, then the workspace layer, then the
 * session layer. Each layer was validated on its own; the merge is checked again because a
 * rule may span layers (workspace `triggerPressure` with session `retainFraction`).
 * @throws PalaceError `invalid-config`
 */
export function mergeSettings(base: PalaceOptions, workspace: SettingsLayer, session: SettingsLayer): PalaceSettings {
  const merged: Record<string, unknown> = {}
  for (const key of SETTING_KEYS) merged[key] = session[key] ?? workspace[key] ?? base[key]
  const settings = merged as unknown as PalaceSettings
  checkCrossFields(settings, 'session settings (plugin config + workspace config.json + session config.json)')
  return Object.freeze(settings)
}

function stripUndefined(input: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined))
}
