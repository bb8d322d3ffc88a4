/**
 * `dsh-memory search | show | forget`: find, read and delete single records of a data dir.
 * Search goes through the store's own full-text index (the CJK-aware tokenizer), so Chinese,
 * Japanese and mixed queries work as they do for the plugins.
 */
import type { Command } from 'commander'
import { Option } from 'commander'
import type { Conversation, Memory, MemoryScopeFilter, MemoryStore, Message, Scene, Scope } from '@dsh-memory/store'
import { didYouMean, loadVocabulary, SUGGEST_LIMITS } from '@dsh-memory/web'
import { resolveDataSource, withDataDir, withStore } from '../data/data-dir.ts'
import { workspaceFilter } from '../data/workspace.ts'
import { CliError, type CliIO, CliUsageError, printJson, println } from '../io.ts'

const SCOPES: readonly Scope[] = ['global', 'workspace', 'session']
/** Below this many hits (or `--limit`, if smaller) a search also says what the user may have meant. */
const FEW_HITS = 3

/** Who wrote a row, for a team's shared workspace rows (nothing for rows from before user identities). */
const authorNote = (createdBy: string) => (createdBy ? `  by ${createdBy}` : '')

/** Parse a comma-separated `--scope` list. @throws CliUsageError */
export function parseScopes(text: string | undefined): Scope[] | undefined {
  if (text === undefined) return undefined
  const scopes = text.split(',').map((part) => part.trim()).filter(Boolean)
  const bad = scopes.find((scope) => !(SCOPES as readonly string[]).includes(scope))
  if (scopes.length === 0 || bad !== undefined) throw new CliUsageError(`--scope expects ${SCOPES.join(', ')} (comma-separated), got ${JSON.stringify(text)}`)
  return scopes as Scope[]
}

/** Parse a positive integer option, at most `max` when given. @throws CliUsageError */
export function parseCount(name: string, text: string, max?: number): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN
  if (!Number.isSafeInteger(value) || value < 1 || (max !== undefined && value > max)) {
    const expected = max === undefined ? 'a positive integer' : `an integer from 1 to ${max}`
    throw new CliUsageError(`${name} expects ${expected}, got ${JSON.stringify(text)}`)
  }
  return value
}

/** One line of text, at most `max` characters. */
export function oneLine(text: string, max = 100): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

const day = (at: number) => new Date(at).toISOString().slice(0, 10)

/** A record found by id, whatever its type. */
export type FoundRecord =
  | { readonly type: 'memory'; readonly memory: Memory }
  | { readonly type: 'message'; readonly message: Message }
  | { readonly type: 'conversation'; readonly conversation: Conversation }
  | { readonly type: 'scene'; readonly scene: Scene }

/** Look an id up in every table that has ids (memories, messages, conversations, scenes). */
export async function findRecord(store: MemoryStore, id: string): Promise<FoundRecord | undefined> {
  const memory = await store.memories.get(id)
  if (memory) return { type: 'memory', memory }
  const message = await store.messages.get(id)
  if (message) return { type: 'message', message }
  const conversation = await store.conversations.get(id)
  if (conversation) return { type: 'conversation', conversation }
  const scene = await store.scenes.get(id)
  if (scene) return { type: 'scene', scene }
  return undefined
}

/** JSON-safe copy of a memory (the embedding as its dimension count). */
function memoryJson(memory: Memory): Record<string, unknown> {
  const { embedding, ...rest } = memory
  return { ...rest, embeddingDims: embedding ? embedding.length : 0 }
}

interface SearchOptions {
  dataDir?: string
  databaseUrl?: string
  in: 'memories' | 'messages' | 'all'
  scope?: string
  kind?: string
  workspace?: string
  session?: string
  role?: 'user' | 'assistant'
  limit: string
  includeSuperseded?: boolean
  json?: boolean
}

/** Register `search`, `show` and `forget`. */
export function registerRecords(program: Command, io: CliIO): void {
  withDataDir(program.command('search'))
    .description('Full-text search over memories (L1) and messages (L0), best first; Chinese, Japanese and mixed text work.')
    .argument('<query>', 'words to look for')
    .addOption(new Option('--in <what>', 'what to search').choices(['memories', 'messages', 'all']).default('all'))
    .option('--scope <list>', 'memories only: global, workspace and/or session (comma-separated)')
    .option('--kind <list>', 'memories only: kinds such as fact,preference,instruction,episode (comma-separated)')
    .option('--workspace <dir|id>', 'only this workspace (plus global memories): a directory (a git clone counts as its project, git:<host>/<owner>/<repo>) or a workspace id')
    .option('--session <id>', 'memories: only this session’s session-scoped ones; messages: only this conversation')
    .addOption(new Option('--role <role>', 'messages only: user or assistant').choices(['user', 'assistant']))
    .option('--limit <n>', 'hits per kind of record', '10')
    .option('--include-superseded', 'memories: also older versions replaced by a newer one')
    .option('--json', 'print {memories: [{score, memory}], messages: [{score, message}], suggestions: [did-you-mean queries]} as one JSON object')
    .action(async (query: string, options: SearchOptions) => {
      if (query.trim() === '') throw new CliUsageError('search needs a non-empty query')
      const limit = parseCount('--limit', options.limit, 1000)
      const scope = parseScopes(options.scope)
      const kind = options.kind?.split(',').map((part) => part.trim()).filter(Boolean)
      const workspace = options.workspace ? workspaceFilter(options.workspace) : undefined
      await withStore(resolveDataSource(options), { readonly: true }, async (store) => {
        const filter: MemoryScopeFilter = {
          ...(scope ? { scope } : {}),
          ...(kind?.length ? { kind } : {}),
          ...(workspace ? { workspace } : {}),
          ...(options.session ? { sessionId: options.session } : {}),
          includeSuperseded: options.includeSuperseded === true,
        }
        const memories = options.in === 'messages' ? [] : await store.search.memories(query, { limit, ...filter })
        const messages =
          options.in === 'memories'
            ? []
            : await store.search.messages(query, {
                limit,
                ...(workspace ? { workspace } : {}),
                ...(options.session ? { conversationId: options.session } : {}),
                ...(options.role ? { role: options.role } : {}),
              })
        // Few hits: misspelt words are corrected against the vocabulary of the memories this
        // search can see (bounded: SUGGEST_LIMITS); the messages' vocabulary is not read, it is
        // unbounded on a large store.
        const suggestions = memories.length + messages.length < Math.min(FEW_HITS, limit) ? didYouMean(query, await loadVocabulary(store, filter), SUGGEST_LIMITS.suggestions) : []
        if (options.json) {
          printJson(io, {
            query,
            memories: memories.map((hit) => ({ score: hit.score, memory: memoryJson(hit.memory) })),
            messages: messages.map((hit) => ({ score: hit.score, message: hit.message })),
            suggestions,
          })
          return
        }
        if (options.in !== 'messages') {
          println(io, `memories (${memories.length})`)
          for (const { score, memory } of memories) {
            println(io, `  ${score.toFixed(2).padStart(6)}  ${memory.id}  ${memory.kind}/${memory.scope}${memory.workspace ? ` ${memory.workspace}` : ''}${authorNote(memory.createdBy)}${memory.supersededBy ? ' (superseded)' : ''}`)
            println(io, `          ${oneLine(memory.text)}`)
          }
        }
        if (options.in !== 'memories') {
          println(io, `messages (${messages.length})`)
          for (const { score, message } of messages) {
            println(io, `  ${score.toFixed(2).padStart(6)}  ${message.id}  ${message.role} in ${message.conversationId}, ${day(message.createdAt)}`)
            println(io, `          ${oneLine(message.text)}`)
          }
        }
        if (suggestions.length > 0) println(io, `did you mean: ${suggestions.map((text) => JSON.stringify(text)).join(', ')}`)
      })
    })

  withDataDir(program.command('show'))
    .description('Show one memory (with its version history), message, conversation (with its messages) or scene, by id.')
    .argument('<id>', 'a memory, message, conversation or scene id')
    .option('--json', 'print {type, …} as one JSON object')
    .action(async (id: string, options: { dataDir?: string; databaseUrl?: string; json?: boolean }) => {
      await withStore(resolveDataSource(options), { readonly: true }, async (store) => {
        const found = await findRecord(store, id)
        if (!found) throw new CliError('not-found', `no memory, message, conversation or scene with id ${id}`)
        if (found.type === 'memory') {
          const history = await store.memories.history(id)
          const sources = (await Promise.all(found.memory.sourceMessageIds.map((source) => store.messages.get(source)))).filter((message): message is Message => message !== undefined)
          if (options.json) return printJson(io, { type: 'memory', memory: memoryJson(found.memory), history: history.map(memoryJson), sources })
          const m = found.memory
          println(io, `memory ${m.id}  ${m.kind}/${m.scope}${m.workspace ? `  workspace ${m.workspace}` : ''}${m.sessionId ? `  session ${m.sessionId}` : ''}${authorNote(m.createdBy)}`)
          println(io, `  revision ${m.revision}, priority ${m.priority}, created ${day(m.createdAt)}, updated ${day(m.updatedAt)}${m.lastRecalledAt ? `, last recalled ${day(m.lastRecalledAt)}` : ''}${m.supersededBy ? `, superseded by ${m.supersededBy}` : ''}`)
          println(io, '')
          println(io, m.text)
          if (history.length > 1) {
            println(io, '')
            println(io, 'history (oldest first)')
            for (const version of history) println(io, `  ${version.id}  ${day(version.createdAt)}  ${oneLine(version.text, 90)}`)
          }
          if (sources.length > 0) {
            println(io, '')
            println(io, 'distilled from')
            for (const message of sources) println(io, `  ${message.id}  ${message.role}: ${oneLine(message.text, 90)}`)
          }
          return
        }
        if (found.type === 'message') {
          const conversation = await store.conversations.get(found.message.conversationId)
          if (options.json) return printJson(io, { type: 'message', message: found.message, conversation })
          const m = found.message
          println(io, `message ${m.id}  ${m.role}, turn ${m.turn}, seq ${m.seq}, ${new Date(m.createdAt).toISOString()}`)
          println(io, `  conversation ${m.conversationId}${conversation?.workspace ? ` in ${conversation.workspace}` : ''}, host id ${m.hostMessageId}`)
          println(io, '')
          println(io, m.text)
          return
        }
        if (found.type === 'conversation') {
          const messages = await store.messages.list({ conversationId: id, limit: 10_000 })
          if (options.json) return printJson(io, { type: 'conversation', conversation: found.conversation, messages })
          const c = found.conversation
          println(io, `conversation ${c.id}${c.title ? `  "${c.title}"` : ''}  workspace ${c.workspace || '(unknown)'}`)
          println(io, `  started ${new Date(c.startedAt).toISOString()}${c.endedAt ? `, ended ${new Date(c.endedAt).toISOString()}` : ''}, ${messages.length} messages`)
          for (const message of messages) println(io, `  [turn ${message.turn}] ${message.role.padEnd(9)} ${oneLine(message.text, 90)}`)
          return
        }
        const members = (await Promise.all(found.scene.memoryIds.map((memoryId) => store.memories.get(memoryId)))).filter((memory): memory is Memory => memory !== undefined)
        if (options.json) return printJson(io, { type: 'scene', scene: found.scene, memories: members.map(memoryJson) })
        const s = found.scene
        println(io, `scene ${s.id}  "${s.title}"  ${s.scope}${s.workspace ? ` ${s.workspace}` : ''}${authorNote(s.createdBy)}, revision ${s.revision}, updated ${day(s.updatedAt)}`)
        println(io, '')
        println(io, s.summary)
        if (members.length > 0) {
          println(io, '')
          println(io, 'memories')
          for (const memory of members) println(io, `  ${memory.id}  ${memory.kind}: ${oneLine(memory.text, 90)}`)
        }
      })
    })

  withDataDir(program.command('forget'))
    .description('Delete one record for good: a memory (with every older version it replaced), a message, a conversation (with its messages) or a scene.')
    .argument('<id>', 'a memory, message, conversation or scene id')
    .option('--json', 'print {type, id, deleted} as one JSON object')
    .action(async (id: string, options: { dataDir?: string; databaseUrl?: string; json?: boolean }) => {
      await withStore(resolveDataSource(options), {}, async (store) => {
        const found = await findRecord(store, id)
        if (!found) throw new CliError('not-found', `no memory, message, conversation or scene with id ${id}`)
        let deleted: number
        let detail: string
        if (found.type === 'memory') {
          deleted = await store.memories.delete(id, { actor: 'cli' })
          detail = deleted > 1 ? ` and ${deleted - 1} older version${deleted > 2 ? 's' : ''}` : ''
        } else if (found.type === 'message') {
          deleted = (await store.messages.delete(id, { actor: 'cli' })) ? 1 : 0
          detail = ''
        } else if (found.type === 'conversation') {
          const messages = (await store.messages.list({ conversationId: id, limit: 10_000 })).length
          deleted = (await store.conversations.delete(id, { actor: 'cli' })) ? 1 + messages : 0
          detail = messages ? ` and its ${messages} message${messages > 1 ? 's' : ''}` : ''
        } else {
          deleted = (await store.scenes.delete(id, { actor: 'cli' })) ? 1 : 0
          detail = ''
        }
        if (options.json) printJson(io, { type: found.type, id, deleted })
        else println(io, `forgot ${found.type} ${id}${detail}`)
      })
    })
}
