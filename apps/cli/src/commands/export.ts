/**
 * `dsh-memory export`: the store's versioned JSONL export (re-importable with `import`), or a
 * Markdown projection for people to read (persona, memories by scope, scenes, and optionally
 * the conversations). Markdown is derived and not imported back.
 */
import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import type { Command } from 'commander'
import { Option } from 'commander'
import type { Memory, MemoryStore, Persona, Scene } from '@dsh-memory/store'
import { existingDatabase, resolveDataSource, withDataDir, withStore } from '../data/data-dir.ts'
import type { CliIO } from '../io.ts'
import { createProgress } from '../progress.ts'

/** Version of the Markdown projection's layout (named in its first lines). */
export const MARKDOWN_EXPORT_VERSION = 1

type Sink = { write(text: string): Promise<void>; close(): Promise<void> }

function sinkFor(io: CliIO, out: string | undefined): Sink {
  if (!out) {
    return {
      write: async (text) => {
        if (!io.stdout.write(text)) await once(io.stdout, 'drain')
      },
      close: async () => {},
    }
  }
  const stream = createWriteStream(out)
  const failed = once(stream, 'error').then(([error]) => {
    throw error
  })
  failed.catch(() => undefined)
  return {
    write: async (text) => {
      if (!stream.write(text)) await Promise.race([once(stream, 'drain'), failed])
    },
    close: async () => {
      stream.end()
      await Promise.race([once(stream, 'finish'), failed])
    },
  }
}

async function allMemories(store: MemoryStore): Promise<Memory[]> {
  const out: Memory[] = []
  for (let offset = 0; ; offset += 10_000) {
    const page = await store.memories.list({ limit: 10_000, offset, orderBy: 'created' })
    out.push(...page)
    if (page.length < 10_000) break
  }
  return out
}

async function allScenes(store: MemoryStore): Promise<Scene[]> {
  const out: Scene[] = []
  for (let offset = 0; ; offset += 10_000) {
    const page = await store.scenes.list({ limit: 10_000, offset })
    out.push(...page)
    if (page.length < 10_000) break
  }
  return out
}

const day = (at: number) => new Date(at).toISOString().slice(0, 10)
/** Keep a stored text inside its list item: indent continuation lines. */
const indent = (text: string, pad = '  ') => text.trim().replace(/\n/g, `\n${pad}`)

function scopeHeading(scope: string, workspace: string | null, sessionId: string | null): string {
  if (scope === 'global') return 'Global'
  if (scope === 'workspace') return `Workspace \`${workspace}\``
  return `Session \`${sessionId}\`${workspace ? ` in \`${workspace}\`` : ''}`
}

/** Group items by their scope heading, global first, then by heading. */
function byScope<T extends { scope: string; workspace: string | null; sessionId?: string | null }>(items: readonly T[]): [string, T[]][] {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const heading = scopeHeading(item.scope, item.workspace, item.sessionId ?? null)
    const list = groups.get(heading) ?? []
    list.push(item)
    groups.set(heading, list)
  }
  return [...groups.entries()].sort(([a], [b]) => (a === 'Global' ? -1 : b === 'Global' ? 1 : a.localeCompare(b)))
}

/** Write the Markdown projection. */
async function writeMarkdown(store: MemoryStore, sink: Sink, options: { messages: boolean; path: string }, tick: () => void): Promise<void> {
  await sink.write(`# dsh-memory export\n\nFrom \`${options.path}\` on ${new Date().toISOString()} (dsh-memory Markdown export v${MARKDOWN_EXPORT_VERSION}; a projection for reading — \`dsh-memory export\` without \`--format markdown\` writes the re-importable JSONL).\n`)
  const persona: Persona[] = await store.persona.list()
  if (persona.length > 0) {
    await sink.write('\n## Persona (L3)\n')
    for (const document of persona) {
      await sink.write(`\n### ${document.scope === 'global' ? 'Global' : `Workspace \`${document.workspace}\``} (version ${document.version}, ${day(document.updatedAt)})\n\n${document.text.trim()}\n`)
      tick()
    }
  }
  const memories = await allMemories(store)
  await sink.write(`\n## Memories (L1): ${memories.length}\n`)
  for (const [heading, group] of byScope(memories)) {
    await sink.write(`\n### ${heading}\n\n`)
    for (const memory of group) {
      await sink.write(`- **${memory.kind}** · ${day(memory.createdAt)} · \`${memory.id}\`${memory.priority ? ` · priority ${memory.priority}` : ''}\n  ${indent(memory.text)}\n`)
      tick()
    }
  }
  const scenes = await allScenes(store)
  if (scenes.length > 0) {
    const texts = new Map(memories.map((memory) => [memory.id, memory.text]))
    await sink.write(`\n## Scenes (L2): ${scenes.length}\n`)
    for (const scene of scenes) {
      await sink.write(`\n### ${scene.title}\n\n${scopeHeading(scene.scope, scene.workspace, scene.sessionId)} · updated ${day(scene.updatedAt)} · \`${scene.id}\`\n\n${scene.summary.trim()}\n`)
      const members = scene.memoryIds.map((id) => texts.get(id)).filter((text): text is string => text !== undefined)
      if (members.length > 0) await sink.write(`\n${members.map((text) => `- ${indent(text)}`).join('\n')}\n`)
      tick()
    }
  }
  if (options.messages) {
    await sink.write('\n## Conversations (L0)\n')
    for (let offset = 0; ; offset += 1_000) {
      const page = await store.conversations.list({ limit: 1_000, offset })
      for (const conversation of page) {
        await sink.write(`\n### ${conversation.title ? `${conversation.title} · ` : ''}\`${conversation.id}\`\n\n${conversation.workspace ? `Workspace \`${conversation.workspace}\` · ` : ''}started ${new Date(conversation.startedAt).toISOString()}\n\n`)
        const messages = await store.messages.list({ conversationId: conversation.id, limit: 10_000 })
        for (const message of messages) {
          await sink.write(`- **${message.role}** (turn ${message.turn}): ${indent(message.text)}\n`)
          tick()
        }
      }
      if (page.length < 1_000) break
    }
  }
}

/** Register `export`. */
export function registerExport(program: Command, io: CliIO): void {
  withDataDir(program.command('export'))
    .description('Write the data dir (or PostgreSQL database) as versioned JSONL (re-importable with `dsh-memory import`) or as Markdown for reading.')
    .addOption(new Option('--format <format>', 'jsonl or markdown').choices(['jsonl', 'markdown']).default('jsonl'))
    .option('--out <file>', 'write to this file instead of stdout')
    .option('--messages', 'markdown: also the conversations (L0 messages); JSONL always has everything')
    .option('--quiet', 'no progress output')
    .action(async (options: { dataDir?: string; databaseUrl?: string; format: 'jsonl' | 'markdown'; out?: string; messages?: boolean; quiet?: boolean }) => {
      const source = resolveDataSource(options)
      const path = source.kind === 'sqlite' ? existingDatabase(source.dataDir) : source.label
      const progress = createProgress(io, options.quiet === true)
      await withStore(source, { readonly: true }, async (store) => {
        const counts = await store.stats.counts()
        const sink = sinkFor(io, options.out)
        try {
          if (options.format === 'jsonl') {
            const total = 1 + counts.conversations + counts.messages.total + counts.memories.current + counts.memories.superseded + counts.scenes.total + counts.persona.total
            progress.start('export jsonl', total)
            for await (const line of store.exportJsonl()) {
              await sink.write(`${line}\n`)
              progress.tick()
            }
          } else {
            const total = counts.persona.total + counts.memories.current + counts.scenes.total + (options.messages ? counts.messages.total : 0)
            progress.start('export markdown', total)
            await writeMarkdown(store, sink, { messages: options.messages === true, path }, () => progress.tick())
          }
        } finally {
          progress.stop()
          await sink.close()
        }
      })
    })
}
