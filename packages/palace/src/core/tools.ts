/**
 * The six model tools, host-independent: each has a name, a description, a JSON Schema for
 * its parameters, a zod schema that validates what the model actually sent, and a handler
 * that never throws — every failure becomes `{ ok: false, code, text }` with a message the
 * model can act on.
 */
import { toolParameters } from '@dsh-memory/store/kit'
import { z } from 'zod'
import { describeError, isPalaceError, PalaceError } from './errors.js'
import { retainBudget, splitArchivable } from './gates.js'
import { validateCategory, validateNamespace, validateSelfName } from './names.js'
import type { NamespaceArchive } from './namespace.js'
import { SETTING_KEYS, settingsLayerSchema, type SettingsLayer } from './options.js'
import type { Palace, PressureSample, SessionView } from './palace.js'
import { parseQuery, type ParsedQuery } from './query.js'
import { inRanges, formatRanges } from './ranges.js'
import { readArchive, READ_CAP } from './read.js'
import { searchArchives, SEARCH_OUTPUT_CAP, type SearchSource } from './search.js'
import { planArchive } from './segments.js'
import type { PalaceWorkspace } from './workspace.js'

/** What every palace tool returns (the canonical tool value). */
export interface ToolReply {
  readonly ok: boolean
  /** Stable error code when `ok` is false. */
  readonly code?: string
  /** What the model reads. */
  readonly text: string
}

/** Per-call context the adapter supplies. */
export interface ToolCallContext {
  readonly session: SessionView | undefined
  /** Pressure numbers, when the host can measure them (used by palace_turns). */
  readonly pressure?: () => Promise<PressureSample>
}

/** A host-independent tool. */
export interface PalaceTool {
  readonly name: string
  readonly description: string
  /** JSON Schema of the parameters, as the model sees it. */
  readonly parameters: Record<string, unknown>
  run(args: unknown, call: ToolCallContext): Promise<ToolReply>
}

const int = z.number().int()
const turnNumber = int.nonnegative()

const archiveArgs = z
  .object({
    segments: z
      .array(
        z
          .object({
            category: z.string().describe('Category name: letters (any script), digits, space, "_" or "-", at most 40.'),
            fromTurn: turnNumber.describe('First turn of the segment (inclusive).'),
            toTurn: turnNumber.describe('Last turn of the segment (inclusive).'),
          })
          .strict(),
      )
      .min(1)
      .max(200)
      .describe('Consecutive turn ranges with their category, e.g. [{"category":"setup","fromTurn":3,"toTurn":20},{"category":"debugging","fromTurn":21,"toTurn":40}].'),
    summaries: z
      .array(z.object({ category: z.string(), text: z.string() }).strict())
      .max(50)
      .optional()
      .describe('One summary per category used in segments: what those turns covered.'),
    summary: z.string().optional().describe('Instead of summaries when all segments use one category.'),
    selfName: z.string().optional().describe('File-name prefix (letters, digits, "-"); defaults to the configured selfNameSlug.'),
  })
  .strict()

const turnsArgs = z
  .object({
    fromTurn: turnNumber.optional(),
    toTurn: turnNumber.optional(),
    limit: int.min(1).max(500).optional().describe('At most this many turns (default 80, max 500).'),
    all: z.boolean().optional().describe('Include archived turns (marked ✓).'),
  })
  .strict()

const summaryArgs = z
  .object({
    month: z.string().optional().describe('YYYY-MM'),
    category: z.string().optional(),
    limit: int.min(1).max(36).optional().describe('Months to list (default 6).'),
    namespace: z.string().optional().describe('Another memory name of this workspace.'),
    append: z.string().optional().describe('A note to append for not-yet-archived turns (needs fromTurn/toTurn).'),
    fromTurn: turnNumber.optional(),
    toTurn: turnNumber.optional(),
  })
  .strict()

const searchArgs = z
  .object({
    keyword: z.string().min(1).max(500).describe('Keywords (AND), "quoted phrases" allowed.'),
    namespace: z.string().optional(),
    all: z.boolean().optional(),
    category: z.string().optional(),
    limitTurns: int.min(1).max(30).optional().describe('Turns to return when grouping (1–30).'),
    limit: int.min(1).max(200).optional().describe('Hit lines to return with groupByTurn=false (1–200).'),
    groupByTurn: z.boolean().optional(),
    includeSummary: z.boolean().optional(),
  })
  .strict()

const readArgs = z
  .object({
    fromTurn: turnNumber.optional(),
    toTurn: turnNumber.optional(),
    path: z.string().min(1).max(1000).optional(),
    namespace: z.string().optional(),
    offset: int.nonnegative().optional().describe('Character offset to continue a long read.'),
    maxChars: int.min(1).max(READ_CAP).optional().describe('At most this many characters (default and max 60000).'),
  })
  .strict()

const configArgs = z
  .object({
    action: z.enum(['get', 'set']).optional(),
    scope: z.enum(['session', 'workspace']).optional().describe('Where set writes settings (default session).'),
    namespace: z.string().optional().describe('Memory name of this session.'),
  })
  .extend(settingsLayerSchema.shape)
  .strict()

function zodMessage(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown argument${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}`
      return `${issue.path.length > 0 ? issue.path.join('.') : 'arguments'}: ${issue.message}`
    })
    .join('; ')
}

function parse<T>(schema: z.ZodType<T>, args: unknown, tool: string): T {
  const result = schema.safeParse(args ?? {})
  if (!result.success) throw new PalaceError('invalid-argument', `${tool}: ${zodMessage(result.error)}`)
  return result.data
}

/** One tool: what the model sent is parsed by `schema`, and every failure becomes a reply. */
function defineTool<T>(name: keyof typeof DESCRIPTIONS, schema: z.ZodType<T>, handle: (input: T, call: ToolCallContext) => Promise<ToolReply>): PalaceTool {
  return {
    name,
    description: DESCRIPTIONS[name],
    parameters: toolParameters(schema),
    async run(args, call) {
      try {
        // Awaited here, so a rejection of the handler is caught as well.
        return await handle(parse(schema, args, name), call)
      } catch (error) {
        return fail(name, error)
      }
    },
  }
}

function fail(tool: string, error: unknown): ToolReply {
  const code = isPalaceError(error) ? error.code : 'internal'
  const message = isPalaceError(error) ? error.message : describeError(error)
  return { ok: false, code, text: `${tool} failed [${code}]: ${message.startsWith(`${tool}: `) ? message.slice(tool.length + 2) : message}` }
}

interface Resolved {
  readonly session: SessionView
  readonly workspace: PalaceWorkspace
  readonly namespace: string | undefined
  /** What to tell the model when the session has no memory name. */
  readonly unnamed: string
}

async function resolveSession(palace: Palace, call: ToolCallContext): Promise<Resolved> {
  const session = call.session
  if (!session) throw new PalaceError('invalid-argument', 'this tool needs the calling agent\'s session, which the host did not provide')
  if (!session.cwd) throw new PalaceError('invalid-argument', 'this session has no workspace folder, so it has no memory palace')
  const workspace = palace.workspace(session.cwd)
  const namespace = await workspace.namespaceOf(session.id)
  const autoName = namespace === undefined && (await palace.settingsOrDefault(session)).autoName
  return { session, workspace, namespace, unnamed: autoName ? UNNAMED_AUTO : UNNAMED }
}

/**
 * The session's own memory name for a write (archive, note, session settings), given
 * automatically when it has none and `autoName` is on.
 * @throws PalaceError `unnamed-session` (autoName off), `disabled`
 */
async function ownNamespace(palace: Palace, resolved: Resolved): Promise<{ namespace: string; automatic: boolean }> {
  if (resolved.namespace !== undefined) return { namespace: resolved.namespace, automatic: false }
  const context = await palace.context(resolved.session)
  if (!context) throw new PalaceError('disabled', DISABLED)
  const namespace = await palace.archiveNamespace(resolved.session, context)
  if (namespace === undefined) throw new PalaceError('unnamed-session', resolved.unnamed)
  return { namespace, automatic: true }
}

/** A namespace given by the model: valid, and existing in this workspace. */
async function existingNamespace(workspace: PalaceWorkspace, name: string): Promise<string> {
  validateNamespace(name)
  const known = await workspace.listNamespaces()
  if (!known.includes(name)) throw new PalaceError('not-found', `no memory named "${name}" in this workspace; known: ${known.length > 0 ? known.join(', ') : '(none)'}`)
  return name
}

// No "ask the user": a headless run has nobody to ask.
const UNNAMED = 'this session has no memory name, so nothing is archived for it. Name it with palace_config with action="set", namespace="…" (a short English name for this work, the user\'s if they gave one: letters, digits, space, "_", "-"; at most 32).'
const UNNAMED_AUTO = 'nothing of this session is archived yet (歸檔記憶爲空): it gets an automatic memory name at its first archive (before a compaction, or palace_archive).'
const DISABLED = 'the memory palace is switched off for this session (palace_config enabled=true turns it on)'

/** What each tool tells the model it does. */
const DESCRIPTIONS = {
  palace_archive:
    'Archive turns of this session verbatim into the memory palace (workspace folder memory-palace/). Give segments=[{category, fromTurn, toTurn}, …]: every turn gets exactly one category, ranges must not overlap, and together they must start at the first unarchived turn and leave no unarchived turn in between (a category may take several segments; its turns go into one file per month). Give summaries=[{category, text}, …] with one short paragraph per category describing only those turns (appended to the month\'s _summary.md), or summary="…" when there is a single category. selfName sets the file-name prefix. Turn numbers come from palace_turns. A session without a memory name gets an automatic one (unless autoName is off).',
  palace_turns:
    'List this session\'s turns for archiving: turn number, speaker and the first 70 characters. Turn numbers are session log event numbers (system notes, plugin steering and pure tool rounds count too), so never derive them from message positions. By default lists the turns not archived yet; all=true includes archived ones. fromTurn/toTurn/limit narrow the list.',
  palace_summary:
    'Read month summaries of the memory palace. Without month: the most recent months (limit, default 6) with the end of each summary and the number of archive files. month="YYYY-MM": that month\'s whole summary (which archive covered what). category: only that category\'s paragraphs. append="text" with fromTurn/toTurn: add a note about recent turns that are not archived yet. namespace reads another session\'s memory.',
  palace_search:
    'Search archived turns (not the summaries). keyword: space-separated keywords that must all occur (AND); quote a phrase with "…" or 「…」. Works for Chinese and Japanese. By default searches this session\'s memory; namespace searches another memory of this workspace, all=true searches every memory (results name their source); category limits to one category. Results are grouped by turn (one representative hit and the turn\'s hit count; limitTurns, default from settings) or, with groupByTurn=false, raw hit lines (limit). Each hit shows turn, file path and line; output is capped at 8000 characters. When no turn matches, matching month summaries are shown and labelled (a summary is not a turn); includeSummary=true adds them anyway.',
  palace_read:
    'Read archived turns verbatim (text, reasoning, tool calls and results). fromTurn/toTurn return those turns in full; path reads a file of the palace ("<YYYY-MM>/<category>/<file>.md", also the "<memory>/…:<line>" paths palace_search prints, which jump to that turn); namespace reads another memory. At most 60000 characters per call: when more remains, the reply says which offset to continue from. Ends with a line of auto-extracted back-links (turns, files, tools) for orientation.',
  palace_config:
    `View or change the memory palace settings of this session. action="get" (default) shows the effective settings, the workspace defaults and this session's own. action="set" with namespace="…" names this session's memory (English letters, digits, space, "_", "-", at most 32; renaming, an automatic name too, moves its folder with everything archived), and/or with settings (${SETTING_KEYS.join(', ')}) changes them for this session, or with scope="workspace" the defaults of new sessions.`,
} as const

/** Build the six tools over a palace. */
export function createPalaceTools(palace: Palace): PalaceTool[] {
  const tools: PalaceTool[] = [
    defineTool('palace_archive', archiveArgs, async (input, call) => {
      const resolved = await resolveSession(palace, call)
      const { session } = resolved
      const context = await palace.context(session)
      if (!context) throw new PalaceError('disabled', DISABLED)
      if (resolved.namespace === undefined && !context.settings.effective.autoName) throw new PalaceError('unnamed-session', resolved.unnamed)
      const settings = context.settings.effective
      const turns = palace.turns(session, settings.includeReasoning)
      const ranges = await palace.archivedRanges(context)
      const plan = planArchive(
        {
          segments: input.segments,
          ...(input.summaries ? { summaries: input.summaries } : {}),
          ...(input.summary !== undefined ? { summary: input.summary } : {}),
          selfName: input.selfName !== undefined ? validateSelfName(input.selfName) : settings.selfNameSlug,
        },
        turns,
        (turn) => inRanges(ranges, turn),
        { maxFileBytes: settings.maxFileBytes },
      )
      // Named only once the plan is valid, so a refused archive leaves no folder behind.
      const { namespace, automatic } = await ownNamespace(palace, resolved)
      const outcome = await palace.commitArchive(session, context, namespace, plan)
      const lines = [
        ...(automatic ? [`This session had no memory name; it is now "${namespace}" (palace_config action="set" namespace="…" renames it, moving its files).`] : []),
        `Archived ${outcome.turns.length} turns into memory "${namespace}" (${outcome.month}); archived now: ${formatRanges(outcome.state.ranges)}.`,
        ...outcome.files.map((file) => `- ${namespace}/${file.path}: ${file.category}, turns ${formatRanges([[Math.min(...file.turns), Math.max(...file.turns)]])} (${file.created ? 'new volume' : 'appended'})`),
        `Summaries appended to ${namespace}/${outcome.month}/_summary.md.`,
      ]
      if (settings.compactAfterArchive) lines.push('The archived span will be compacted before the next request.')
      return { ok: true, text: lines.join('\n') }
    }),
    defineTool('palace_turns', turnsArgs, async (input, call) => {
      const { session, workspace, namespace } = await resolveSession(palace, call)
      const settings = (await workspace.settings(session.id)).effective
      const turns = palace.turns(session, settings.includeReasoning)
      const unnamedLabel = settings.autoName ? '(unnamed: the first archive names it automatically)' : '(unnamed: archiving is refused until it has a name)'
      const ranges = namespace !== undefined ? await (await workspace.openArchive(namespace)).ranges() : []
      const sample = call.pressure ? await call.pressure().catch(() => undefined) : undefined
      const split = splitArchivable(turns, (turn) => inRanges(ranges, turn), retainBudget(sample?.contextWindow, settings))
      const retained = new Set(sample?.contextWindow ? split.retained.map((turn) => turn.turn) : [])
      const listed = turns.filter(
        (turn) =>
          (input.all === true || !inRanges(ranges, turn.turn)) &&
          (input.fromTurn === undefined || turn.turn >= input.fromTurn) &&
          (input.toTurn === undefined || turn.turn <= input.toTurn),
      )
      const limit = input.limit ?? 80
      const shown = listed.slice(0, limit)
      const header = [
        `${turns.length} turns in this session; memory ${namespace !== undefined ? `"${namespace}"` : unnamedLabel}; archived: ${formatRanges(ranges)}.`,
        split.firstUnarchived ? `First unarchived turn: ${split.firstUnarchived.turn}. Archivable now: ${split.archivable.length} turns${split.archivable.length > 0 ? ` (${split.archivable[0]!.turn}–${split.archivable[split.archivable.length - 1]!.turn})` : ''}.` : 'Every turn is archived.',
      ]
      if (retained.size > 0) header.push(`Turns marked "kept" fit the retained budget and stay in context.`)
      const rows = shown.map((turn) => {
        const flags = [inRanges(ranges, turn.turn) ? '✓' : '', retained.has(turn.turn) ? 'kept' : '', turn.complete ? '' : 'running'].filter(Boolean).join(' ')
        return `${turn.turn} · ${turn.speaker}${flags ? ` [${flags}]` : ''} · ${turn.head}`
      })
      if (listed.length > shown.length) rows.push(`… ${listed.length - shown.length} more (use fromTurn=${listed[shown.length]!.turn})`)
      if (rows.length === 0) rows.push('(no turns match)')
      return { ok: true, text: [...header, ...rows].join('\n') }
    }),
    defineTool('palace_summary', summaryArgs, async (input, call) => {
      const resolved = await resolveSession(palace, call)
      const { workspace, namespace: own } = resolved
      if (input.append !== undefined) {
        if (input.namespace !== undefined && input.namespace !== own) throw new PalaceError('invalid-argument', 'append writes to this session\'s own memory only; drop namespace')
        if (input.fromTurn === undefined || input.toTurn === undefined) throw new PalaceError('invalid-argument', 'append needs fromTurn and toTurn (the turns the note is about)')
        if (input.fromTurn > input.toTurn) throw new PalaceError('invalid-argument', `fromTurn ${input.fromTurn} is after toTurn ${input.toTurn}`)
        if (input.append.trim().length === 0 || input.append.length > 4000) throw new PalaceError('invalid-argument', 'append must be 1–4000 characters')
        const category = input.category !== undefined ? validateCategory(input.category) : 'note'
        const { namespace: mine } = await ownNamespace(palace, resolved)
        const written = await workspace.appendNote(mine, { category, fromTurn: input.fromTurn, toTurn: input.toTurn, body: input.append })
        return { ok: true, text: `Appended a note about turns ${input.fromTurn}–${input.toTurn} to ${mine}/${written.path}.` }
      }
      const namespace = input.namespace !== undefined ? await existingNamespace(workspace, input.namespace) : own
      if (namespace === undefined) throw new PalaceError('unnamed-session', resolved.unnamed)
      const archive = await workspace.openArchive(namespace)
      if (input.month === undefined) {
        if (input.category !== undefined) throw new PalaceError('invalid-argument', 'category needs a month (month="YYYY-MM")')
        const months = (await archive.months()).slice(0, input.limit ?? 6)
        if (months.length === 0) return { ok: true, text: `Memory "${namespace}" has no archives yet (歸檔記憶爲空).` }
        const rows = [`Memory "${namespace}": ${months.length} most recent month${months.length === 1 ? '' : 's'}.`]
        for (const month of months) {
          const paragraphs = await archive.summaryParagraphs(month.month)
          const last = paragraphs[paragraphs.length - 1]
          const preview = last ? tail(last.body, 300) : '(no summary)'
          rows.push(`${month.month} · ${month.files} archive file${month.files === 1 ? '' : 's'} · ${paragraphs.length} paragraph${paragraphs.length === 1 ? '' : 's'} · categories: ${month.categories.join(', ') || '(none)'}\n   …${preview}`)
        }
        rows.push('Read a month with palace_summary(month="YYYY-MM").')
        return { ok: true, text: rows.join('\n') }
      }
      const text = await archive.summaryText(input.month)
      if (text === undefined) {
        const months = (await archive.months()).map((month) => month.month)
        throw new PalaceError('not-found', `memory "${namespace}" has no summary for ${input.month}; months with archives: ${months.join(', ') || '(none)'}`)
      }
      if (input.category === undefined) return { ok: true, text: capText(text, READ_CAP) }
      const paragraphs = (await archive.summaryParagraphs(input.month)).filter((paragraph) => paragraph.category === input.category)
      if (paragraphs.length === 0) throw new PalaceError('not-found', `no "${input.category}" paragraphs in ${input.month}`)
      return { ok: true, text: capText(paragraphs.map((paragraph) => paragraph.text).join('\n\n'), READ_CAP) }
    }),
    defineTool('palace_search', searchArgs, async (input, call) => {
      const query = parseQuery(input.keyword)
      if (query.keywords.length === 0) throw new PalaceError('invalid-argument', 'keyword must contain at least one word or "phrase"')
      const { session, workspace, namespace: own, unnamed } = await resolveSession(palace, call)
      const settings = (await workspace.settings(session.id)).effective
      if (input.all === true && input.namespace !== undefined) throw new PalaceError('invalid-argument', 'give either namespace or all=true, not both')
      let names: string[]
      if (input.all === true) names = await workspace.listNamespaces()
      else if (input.namespace !== undefined) names = [await existingNamespace(workspace, input.namespace)]
      else if (own !== undefined) names = [own]
      else throw new PalaceError('unnamed-session', `${unnamed} To search other memories of this workspace use all=true or namespace="…".`)
      if (names.length === 0) return { ok: true, text: 'This workspace has no archived memory yet (歸檔記憶爲空).' }
      const category = input.category !== undefined ? validateCategory(input.category) : undefined
      const sources: SearchSource[] = []
      for (const name of names) sources.push({ namespace: name, archive: await workspace.openArchive(name) })
      const candidates = await indexCandidates(palace, workspace, query, sources)
      const result = await searchArchives(query, sources, {
        ...(category !== undefined ? { category } : {}),
        groupByTurn: input.groupByTurn ?? true,
        limitTurns: input.limitTurns ?? input.limit ?? settings.searchTurnLimit,
        limit: input.limit ?? 20,
        includeSummary: input.includeSummary ?? false,
        labelSource: input.all === true,
        ...(candidates ? { candidates } : {}),
        outputCap: SEARCH_OUTPUT_CAP,
      })
      if (result.groups.length > 0) return { ok: true, text: result.text }
      return { ok: true, text: result.text + (await spellingHint(palace, workspace, query, sources)) }
    }),
    defineTool('palace_read', readArgs, async (input, call) => {
      if (input.fromTurn === undefined && input.toTurn === undefined && input.path === undefined) {
        throw new PalaceError('invalid-argument', 'give fromTurn/toTurn, a path, or both')
      }
      const { workspace, namespace: own, unnamed } = await resolveSession(palace, call)
      let namespace = input.namespace !== undefined ? await existingNamespace(workspace, input.namespace) : own
      // A search path names its memory first: "<memory>/<YYYY-MM>/…".
      if (input.namespace === undefined && input.path !== undefined) {
        const first = input.path.replace(/\\/g, '/').split('/')[0] ?? ''
        const known = await workspace.listNamespaces()
        if (known.includes(first) && !/^\d{4}-\d{2}$/.test(first)) namespace = first
      }
      if (namespace === undefined) throw new PalaceError('unnamed-session', `${unnamed} To read another memory pass namespace="…".`)
      const archive: NamespaceArchive = await workspace.openArchive(namespace)
      const result = await readArchive(archive, {
        ...(input.fromTurn !== undefined ? { fromTurn: input.fromTurn } : {}),
        ...(input.toTurn !== undefined ? { toTurn: input.toTurn } : {}),
        ...(input.path !== undefined ? { path: input.path } : {}),
        ...(input.offset !== undefined ? { offset: input.offset } : {}),
        ...(input.maxChars !== undefined ? { maxChars: input.maxChars } : {}),
      })
      return { ok: true, text: result.text }
    }),
    defineTool('palace_config', configArgs, async (input, call) => {
      const { action = 'get', scope = 'session', namespace, ...rest } = input
      const patch: SettingsLayer = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined))
      const resolved = await resolveSession(palace, call)
      const { session, workspace } = resolved
      const notes: string[] = []
      if (action === 'get') {
        if (namespace !== undefined || Object.keys(patch).length > 0) throw new PalaceError('invalid-argument', 'action="get" takes no settings; use action="set" to change them')
      } else {
        if (namespace === undefined && Object.keys(patch).length === 0) throw new PalaceError('invalid-argument', 'action="set" needs namespace and/or at least one setting')
        if (namespace !== undefined) {
          if (scope === 'workspace') throw new PalaceError('invalid-argument', 'namespace names one session; it cannot be a workspace default')
          const { previous } = await workspace.setNamespace(session.id, namespace)
          notes.push(previous === undefined ? `This session's memory is now named "${namespace}".` : previous === namespace ? `The memory name stays "${namespace}".` : `Renamed memory "${previous}" to "${namespace}" (its folder moved).`)
        }
        if (Object.keys(patch).length > 0) {
          if (scope === 'session' && (await workspace.namespaceOf(session.id)) === undefined) {
            // This session's settings live in its memory folder: with autoName it gets its name now.
            const { namespace: given } = await ownNamespace(palace, resolved)
            notes.push(`This session had no memory name; it is now "${given}".`)
          }
          await workspace.updateSettings(session.id, scope, patch)
          notes.push(`Updated ${scope === 'workspace' ? 'the workspace defaults' : 'this session\'s settings'}: ${Object.keys(patch).join(', ')}.`)
        }
      }
      const current = await workspace.settings(session.id)
      const name =
        current.namespace === undefined
          ? current.effective.autoName
            ? '(unnamed — it gets an automatic name at its first archive)'
            : '(unnamed — nothing is archived until it has one)'
          : (await workspace.isAutomatic(current.namespace))
            ? `"${current.namespace}" (automatic; action="set" namespace="…" renames it)`
            : `"${current.namespace}"`
      const lines = [
        ...notes,
        `Memory name: ${name}; session ${session.id}; palace ${workspace.root}.`,
        `Effective: ${JSON.stringify(current.effective)}`,
        `Workspace defaults (${workspace.options.rootDirName}/config.json): ${JSON.stringify(current.workspace)}`,
        `This session (${current.namespace !== undefined ? `${workspace.options.rootDirName}/${current.namespace}/config.json` : 'no file until named'}): ${JSON.stringify(current.session)}`,
      ]
      return { ok: true, text: lines.join('\n') }
    }),
  ]
  return tools
}

async function indexCandidates(palace: Palace, workspace: PalaceWorkspace, query: ParsedQuery, sources: readonly SearchSource[]): Promise<Map<string, Set<number>> | undefined> {
  const index = palace.deps.index
  if (!index) return undefined
  try {
    return await index.candidates(workspace.workspace, query, sources)
  } catch (error) {
    palace.deps.logger?.warn(`archive index lookup failed, scanning files instead: ${describeError(error)}`)
    return undefined
  }
}

/**
 * Nothing matched exactly: the turns the archive index finds by spelling (typos, prefixes),
 * so the model can retry with the archive's own words. Empty without an index or a near match.
 */
async function spellingHint(palace: Palace, workspace: PalaceWorkspace, query: ParsedQuery, sources: readonly SearchSource[]): Promise<string> {
  const index = palace.deps.index
  if (!index) return ''
  try {
    const near = await index.suggest(workspace.workspace, query, sources)
    if (near.length === 0) return ''
    const words = [...new Set(near.flatMap((hit) => hit.terms))].slice(0, 8)
    const label = (hit: (typeof near)[number]): string => (sources.length > 1 ? `[${hit.namespace}] ` : '')
    return `\nDid you mean: ${words.join(' ')}? Nearest turns by spelling: ${near.map((hit) => `${label(hit)}turn ${hit.turn} (${hit.terms.join(', ')})`).join('; ')}. Search again with those words, or palace_read(fromTurn=N, toTurn=N).`
  } catch (error) {
    palace.deps.logger?.warn(`archive index suggestions failed: ${describeError(error)}`)
    return ''
  }
}

function tail(text: string, chars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  const all = [...flat]
  return all.length <= chars ? flat : all.slice(all.length - chars).join('')
}

function capText(text: string, cap: number): string {
  const chars = [...text]
  if (chars.length <= cap) return text
  return `${chars.slice(0, cap).join('')}\n\n… cut at ${cap} characters (of ${chars.length}); filter with category="…".`
}
