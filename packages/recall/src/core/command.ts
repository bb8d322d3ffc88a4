/**
 * The `/memory` slash command as a pure function of its input: parse, run against the
 * engine, return the text the UI shows. Command output never reaches the model.
 */
import { errorMessage, isRecallError, RecallError } from './errors.ts'
import { isLayerName, LAYER_NAMES, type LayerName } from './layers.ts'
import type { InjectSwitch, MemoryMode } from './options.ts'
import type { RecallEngine, RecallScope } from './recall-engine.ts'
import { INJECT_SWITCHES, MEMORY_MODES, MODE_DESCRIPTIONS, type SessionMemorySettings, settingsLabel } from './session-modes.ts'

/** What a command run returns (mirrors the host's CommandResult). */
export type CommandOutcome = { readonly kind: 'success'; readonly text: string } | { readonly kind: 'error'; readonly text: string }

/** The last automatic recall of a session, for `/memory status`. */
export interface LastRecallInfo {
  readonly at: number
  readonly injected: number
  readonly chars: number
  readonly strategy: string
  readonly skipped?: string
}

/** Callbacks the adapter supplies. */
export interface MemoryCommandHooks {
  /** The last automatic recall of the session, when one ran. */
  readonly lastRecall?: (sessionId: string) => LastRecallInfo | undefined
  /** Called after a settings change committed. */
  readonly onSettingsChanged?: (sessionId: string, settings: SessionMemorySettings) => void
  /** Called after a memory was added, corrected, deleted or promoted by the command. */
  readonly onMemoryChanged?: (change: { op: 'add' | 'correct' | 'delete' | 'promote'; id: string; sessionId: string }) => void
  /** Explicit layers of the calling session (absent: the subcommands answer that layers are unavailable here). */
  readonly layers?: {
    enable(layer: LayerName): Promise<string>
    disable(layer?: LayerName): Promise<string>
    refresh(layer?: LayerName): Promise<string>
    statusLines(): Promise<string[]>
  }
  /** Rebuild the Markdown projection of every layer. @returns what was written. */
  readonly project?: () => Promise<string>
}

/** The usage text. */
export const MEMORY_COMMAND_USAGE = [
  'Usage: /memory <subcommand>',
  '  status                 mode, injection and what this workspace remembers',
  '  list [n]               the newest n memories visible here (default 20)',
  '  remember [global|workspace|--global] <text>   save a memory (this workspace by default, or global)',
  '  correct [global|workspace] <id> <text>   replace a memory\'s text (the old version is kept as history)',
  '  forget [global|workspace] <id>   delete a memory and its older versions',
  `  mode <${MEMORY_MODES.join('|')}>   this session's memory mode`,
  `  inject <${INJECT_SWITCHES.join('|')}>   automatic injection: follow the config, force on, or write-only`,
  `  enable <${LAYER_NAMES.join('|')}>   explicit mode: load that layer's index into this session`,
  '  refresh [layer]        a new index snapshot when the layer changed',
  '  disable [layer]        stop maintaining the layer(s) here (no layer left: automatic recall again)',
  '  promote <id>           move a workspace memory to the global layer (history kept)',
  '  review                 memories rated incorrect, waiting for a correction',
  '  project                rebuild the Markdown files of every layer',
].join('\n')

const LIST_DEFAULT = 20
const LIST_MAX = 200
const LINE_CHARS = 120

function line(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  const chars = [...flat]
  return chars.length > LINE_CHARS ? chars.slice(0, LINE_CHARS - 1).join('') + '…' : flat
}

/**
 * Run `/memory <rawInput>` for a session. Never throws: failures become `error` outcomes
 * with a message that says what to do.
 */
export async function runMemoryCommand(engine: RecallEngine, scope: RecallScope, rawInput: string, hooks: MemoryCommandHooks = {}): Promise<CommandOutcome> {
  const input = rawInput.trim()
  const [sub = 'status', ...rest] = input.split(/\s+/)
  const argument = input.slice(sub.length).trim()
  try {
    switch (sub.toLowerCase()) {
      case 'status':
        return { kind: 'success', text: await statusText(engine, scope, hooks) }
      case 'help':
        return { kind: 'success', text: MEMORY_COMMAND_USAGE }
      case 'list': {
        const count = rest[0] === undefined ? LIST_DEFAULT : Number(rest[0])
        if (!Number.isInteger(count) || count < 1 || count > LIST_MAX) return { kind: 'error', text: `list takes a count between 1 and ${LIST_MAX}, got ${JSON.stringify(rest[0])}` }
        const memories = (await engine.visibleMemories(scope)).slice(0, count)
        if (memories.length === 0) return { kind: 'success', text: 'No memories in this workspace yet.' }
        return { kind: 'success', text: memories.map((memory) => `${memory.id}  [${memory.scope}/${memory.kind}]  ${line(memory.text)}`).join('\n') }
      }
      case 'remember': {
        // Ours: `remember [--global] <text>`; the reference's: `remember <global|workspace> <text>`.
        const layer = argument.startsWith('--global') ? 'global' : layerOf(rest[0])
        const text = argument.startsWith('--global') ? argument.slice('--global'.length).trim() : afterWords(argument, layer ? 1 : 0)
        if (!text) return { kind: 'error', text: 'remember needs the text to save: /memory remember [global|workspace] <text>' }
        const redacted = engine.checkWritable(text, 'text')
        const memory = await engine.addMemory({ text, kind: 'fact', ...(layer ? { scope: layer } : {}) }, scope, 'user')
        hooks.onMemoryChanged?.({ op: 'add', id: memory.id, sessionId: scope.sessionId })
        return { kind: 'success', text: `Remembered (${memory.scope}): ${memory.id}${redacted ? ` (${redacted} secret${redacted === 1 ? ' was' : 's were'} redacted)` : ''}` }
      }
      case 'correct': {
        const layer = layerOf(rest[0])
        const id = rest[layer ? 1 : 0]
        const text = id === undefined ? '' : afterWords(argument, layer ? 2 : 1)
        if (!id || !text) return { kind: 'error', text: 'correct needs an id and the new text: /memory correct [global|workspace] <id> <text>' }
        if (layer) await inLayer(engine, id, layer, scope, 'correct')
        const { old, current } = await engine.correctMemory(id, text, scope, 'user')
        hooks.onMemoryChanged?.({ op: 'correct', id: current.id, sessionId: scope.sessionId })
        return { kind: 'success', text: `Corrected ${old.id} → ${current.id} (the old version is kept as history).` }
      }
      case 'forget': {
        const layer = layerOf(rest[0])
        const ids = layer ? rest.slice(1) : rest
        const id = ids[0]
        if (!id || ids.length > 1) return { kind: 'error', text: 'forget takes exactly one memory id: /memory forget [global|workspace] <id>' }
        if (layer) await inLayer(engine, id, layer, scope, 'forget')
        const memory = await engine.deleteMemory(id, scope, 'user')
        hooks.onMemoryChanged?.({ op: 'delete', id: memory.id, sessionId: scope.sessionId })
        return { kind: 'success', text: `Forgot ${memory.id}: ${line(memory.text)}` }
      }
      case 'mode': {
        if (rest.length === 0) {
          const settings = await engine.settings.get(scope.sessionId)
          return { kind: 'success', text: `Mode: ${settings.mode} — ${MODE_DESCRIPTIONS[settings.mode]}` }
        }
        const mode = rest[0]!.toLowerCase() as MemoryMode
        if (rest.length > 1 || !MEMORY_MODES.includes(mode)) return { kind: 'error', text: `mode takes one of ${MEMORY_MODES.join(', ')}` }
        const settings = await engine.settings.update(scope.sessionId, { mode }, 'user')
        hooks.onSettingsChanged?.(scope.sessionId, settings)
        return { kind: 'success', text: `Memory mode for this session: ${mode} — ${MODE_DESCRIPTIONS[mode]}` }
      }
      case 'inject': {
        const inject = rest[0]?.toLowerCase() as InjectSwitch | undefined
        if (rest.length !== 1 || !inject || !INJECT_SWITCHES.includes(inject)) return { kind: 'error', text: `inject takes one of ${INJECT_SWITCHES.join(', ')}` }
        const settings = await engine.settings.update(scope.sessionId, { inject }, 'user')
        hooks.onSettingsChanged?.(scope.sessionId, settings)
        return { kind: 'success', text: `Injection for this session: ${inject} (${settingsLabel(settings, engine.options.recall.enabled)})` }
      }
      case 'enable':
      case 'disable':
      case 'refresh': {
        const verb = sub.toLowerCase() as 'enable' | 'disable' | 'refresh'
        if (!hooks.layers) return { kind: 'error', text: 'memory layers are not available in this host' }
        const layer = rest[0]?.toLowerCase()
        if (rest.length > 1 || (layer !== undefined && !isLayerName(layer)) || (verb === 'enable' && layer === undefined)) {
          return { kind: 'error', text: `${verb} takes ${verb === 'enable' ? 'one' : 'at most one'} layer: ${LAYER_NAMES.join(' or ')}` }
        }
        const text = await hooks.layers[verb](layer as LayerName)
        return { kind: 'success', text }
      }
      case 'promote': {
        const id = rest[0]
        if (!id || rest.length > 1) return { kind: 'error', text: 'promote takes exactly one memory id: /memory promote <id>' }
        const { old, current } = await engine.promoteMemory(id, scope, 'user')
        hooks.onMemoryChanged?.({ op: 'promote', id: current.id, sessionId: scope.sessionId })
        return { kind: 'success', text: `Promoted ${old.id} to the global layer as ${current.id} (the workspace version is kept as history).` }
      }
      case 'review': {
        const flagged = await engine.reviewList(scope)
        if (flagged.length === 0) return { kind: 'success', text: 'No memory is waiting for review.' }
        return {
          kind: 'success',
          text: [
            `${flagged.length} memor${flagged.length === 1 ? 'y was' : 'ies were'} rated incorrect; fix with /memory correct <id> <text> or drop with /memory forget <id>:`,
            ...flagged.map((memory) => `${memory.id}  [${memory.scope}/${memory.kind}]  ${line(memory.text)}`),
          ].join('\n'),
        }
      }
      case 'project': {
        if (!hooks.project) return { kind: 'error', text: 'the Markdown projection is off (layers.projection: false)' }
        return { kind: 'success', text: await hooks.project() }
      }
      default:
        return { kind: 'error', text: `unknown subcommand ${JSON.stringify(sub)}\n${MEMORY_COMMAND_USAGE}` }
    }
  } catch (error) {
    return { kind: 'error', text: isRecallError(error) ? error.message : `memory command failed: ${errorMessage(error)}` }
  }
}

/** The layer word of the reference's forms (`global` / `workspace`, any case), or undefined. */
function layerOf(word: string | undefined): LayerName | undefined {
  const lower = word?.toLowerCase()
  return isLayerName(lower) ? lower : undefined
}

/** `text` without its first `count` whitespace-separated words (inner spacing kept). */
function afterWords(text: string, count: number): string {
  let rest = text.trim()
  for (let i = 0; i < count; i++) rest = rest.replace(/^\S+\s*/, '')
  return rest
}

/**
 * Refuse an edit through the wrong layer: `workspace` names the memories kept for this
 * workspace (its session-scoped ones too), `global` the global ones.
 * @throws RecallError `invalid-argument` (path `layer`) naming the layer the memory is in
 */
async function inLayer(engine: RecallEngine, id: string, layer: LayerName, scope: RecallScope, verb: string): Promise<void> {
  const memory = await engine.resolveMemory(id, scope)
  const actual: LayerName = memory.scope === 'global' ? 'global' : 'workspace'
  if (actual !== layer) {
    throw new RecallError('invalid-argument', `memory ${memory.id} is in the ${actual} layer, not ${layer}: /memory ${verb} ${actual} ${memory.id}${verb === 'correct' ? ' <text>' : ''}`, { path: 'layer' })
  }
}

async function statusText(engine: RecallEngine, scope: RecallScope, hooks: MemoryCommandHooks): Promise<string> {
  let settingsLine: string
  try {
    const settings = await engine.settings.get(scope.sessionId)
    settingsLine = `${settingsLabel(settings, engine.options.recall.enabled)} (mode ${settings.mode}, inject ${settings.inject}${settings.updatedAt === null ? ', default' : ''})`
  } catch (error) {
    settingsLine = `unreadable session settings (${errorMessage(error)}); defaults apply`
  }
  const status = await engine.status(scope)
  const options = engine.options
  const last = hooks.lastRecall?.(scope.sessionId)
  let layerLines: string[] = []
  try {
    layerLines = (await hooks.layers?.statusLines()) ?? []
  } catch (error) {
    layerLines = [`Layers: unreadable (${errorMessage(error)})`]
  }
  return [
    `Memory: ${settingsLine}`,
    ...layerLines,
    `Workspace: ${scope.workspace || '(none)'}`,
    `Memories visible: ${status.memories.workspace} workspace, ${status.memories.global} global, ${status.memories.session} session; scenes: ${status.scenes}; persona: ${status.persona.global ? 'global' : '-'}/${status.persona.workspace ? 'workspace' : '-'}`,
    `Recall: ${options.recall.enabled ? 'enabled' : 'disabled'} by config, strategy ${options.recall.strategy}${options.embedding.enabled ? '' : ' (no embeddings: keyword)'}, at most ${options.recall.maxResults} memories / ${options.recall.maxTotalRecallChars || '∞'} chars, threshold ${options.recall.scoreThreshold}${options.recall.strategy !== 'keyword' && options.embedding.enabled ? `, hybrid threshold ${options.recall.hybridThreshold}` : ''}, half-life ${options.recall.decayHalfLifeDays || '∞'} days`,
    ...(engine.lastEmbeddingError ? [`Embeddings: last error: ${engine.lastEmbeddingError}`] : []),
    last
      ? `Last recall: ${new Date(last.at).toISOString()}, ${last.injected} memories (${last.chars} chars) via ${last.strategy}${last.skipped ? `; ${last.skipped}` : ''}`
      : 'Last recall: none in this session',
  ].join('\n')
}
