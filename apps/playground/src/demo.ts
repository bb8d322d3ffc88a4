import { readdir, readFile, rm, mkdir, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join, relative } from 'node:path'
import { spawnSync } from 'node:child_process'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { DshHome, REPO_ROOT, packWorkspaces } from './host.js'
import { loggedUserMessages } from './session-log.js'
import { contentText, lastUserText, startModelServer, type LoggedRequest, type ScriptedReply } from './model-server.js'

/**
 * The demo: pack every dsh-memory package, install the preset into a fresh DSH profile the way
 * a user does (`dsh plugin --profile demo add @dsh-memory/preset`), boot the real DSH host
 * headless for a short multi-session story, and show what was captured (L0), distilled (L1),
 * recalled (the memory block in a later session's request) and archived (the memory palace),
 * with the data dir to inspect afterwards. The model is an offline scripted server on 127.0.0.1,
 * or the real DeepSeek API when DEEPSEEK_API_KEY is set.
 */

const WORKSPACES = { shop: 'shop-api', blog: 'blog' } as const
const RELEASE_NOTES =
  'Release notes for shop API v2.3, to keep: checkout moves to the new payments service; the rollback window is 42 minutes; ' +
  'feature flag CHECKOUT_V2 gates it; the on-call owner for the launch is Mei.'

/** The story: one prompt per headless session. */
const STORY: { workspace: string; prompt: string; shows: string }[] = [
  { workspace: WORKSPACES.shop, prompt: 'We are building the shop API in TypeScript, and we decided to use PostgreSQL, not MySQL.', shows: 'captured, then distilled into memories' },
  { workspace: WORKSPACES.shop, prompt: 'Deploys of the shop API happen on Tuesdays only. Please remember that.', shows: 'one more memory' },
  { workspace: WORKSPACES.blog, prompt: '我的博客用 Astro 搭建，部署在 Cloudflare Pages 上。', shows: 'Chinese works the same way, in another workspace' },
  { workspace: WORKSPACES.shop, prompt: 'Which database do we use for the shop API, and on which day can I deploy?', shows: 'a new session: recall puts the memories in front of the model' },
  { workspace: WORKSPACES.shop, prompt: `${RELEASE_NOTES} Please archive this in the memory palace under the name "Shop API".`, shows: 'the memory palace archives the session verbatim' },
]

// The offline model's "extraction": which facts a distill request finds in the new lines.
const FACTS: { match: RegExp; kind: string; text: string; scope: 'workspace' | 'global' }[] = [
  { match: /TypeScript/, kind: 'fact', text: 'The shop API is written in TypeScript.', scope: 'workspace' },
  { match: /PostgreSQL/, kind: 'fact', text: 'The shop API uses PostgreSQL (not MySQL).', scope: 'workspace' },
  { match: /Tuesdays/, kind: 'instruction', text: 'Deploy the shop API on Tuesdays only.', scope: 'workspace' },
  { match: /Astro/, kind: 'fact', text: '用户的博客用 Astro 搭建。', scope: 'workspace' },
  { match: /Cloudflare Pages/, kind: 'fact', text: '博客部署在 Cloudflare Pages 上。', scope: 'workspace' },
]

function distillLayer(request: LoggedRequest): string | undefined {
  for (const message of request.body.messages) {
    const match = /\[dsh-memory:distill\/(l1|dedup|l2|l3)\]/.exec(contentText(message.content))
    if (match) return match[1]
  }
  return undefined
}

/** The offline model: extraction JSON for distill requests, tool calls for the palace, short answers otherwise. */
function scriptedModel(request: LoggedRequest): ScriptedReply {
  const layer = distillLayer(request)
  if (layer === 'l1') {
    const prompt = request.body.messages.filter((message) => message.role === 'user').map((message) => contentText(message.content)).join('\n')
    const lines = [...prompt.matchAll(/^\[(m\d+)\] user: (.*)$/gm)]
    const memories = lines.flatMap(([, alias, text]) => FACTS.filter((fact) => fact.match.test(text!)).map((fact) => ({ kind: fact.kind, text: fact.text, scope: fact.scope, priority: 3, src: [alias] })))
    return { kind: 'text', text: JSON.stringify({ memories }) }
  }
  if (layer === 'dedup') return { kind: 'text', text: '{"decisions":[]}' }
  if (layer === 'l2') return { kind: 'text', text: '{"ops":[]}' }
  if (layer === 'l3') return { kind: 'text', text: '# Persona\n' }
  if (request.purpose !== 'chat') return { kind: 'text', text: 'OK.' }

  const prompt = lastUserText(request.body)
  const toolResults = request.body.messages.filter((message) => message.role === 'tool').map((message) => contentText(message.content))
  if (prompt.includes('memory palace')) {
    const last = toolResults[toolResults.length - 1] ?? ''
    if (toolResults.length === 0) return { kind: 'tools', calls: [{ name: 'palace_config', arguments: { action: 'set', namespace: 'Shop API' } }] }
    if (toolResults.length === 1) return { kind: 'tools', calls: [{ name: 'palace_turns', arguments: {} }] }
    if (toolResults.length === 2) {
      const first = /First unarchived turn: (\d+)/.exec(last)
      if (!first) return { kind: 'text', text: `Nothing to archive: ${last.slice(0, 200)}` }
      // From the first unarchived turn (recall's note comes just before the prompt) through the user's prompt.
      const prompt = /^(\d+) · user\b.*Release notes/m.exec(last)
      return {
        kind: 'tools',
        calls: [{ name: 'palace_archive', arguments: { segments: [{ category: 'release-notes', fromTurn: Number(first[1]), toTurn: Number(prompt?.[1] ?? first[1]) }], summary: 'Shop API v2.3 release notes: payments service, 42-minute rollback window, CHECKOUT_V2 flag, on-call Mei.' } }],
      }
    }
    return { kind: 'text', text: last.split('\n')[0] ?? 'Archived.' }
  }
  const recalled = request.body.messages.map((message) => contentText(message.content)).find((text) => text.startsWith('<recalled-memories'))
  if (recalled && prompt.trim().endsWith('?')) {
    const facts = [...recalled.matchAll(/<memory [^>]*>([^<]*)<\/memory>/g)].map((match) => match[1]!.trim())
    return { kind: 'text', text: `From memory: ${facts.join(' ')}` }
  }
  if (/PostgreSQL/.test(prompt)) return { kind: 'text', text: 'Got it: PostgreSQL for the shop API, TypeScript throughout.' }
  if (/Tuesday/.test(prompt)) return { kind: 'text', text: 'Understood: shop API deploys only on Tuesdays.' }
  if (/博客/.test(prompt)) return { kind: 'text', text: '明白了：博客使用 Astro，部署在 Cloudflare Pages。' }
  return { kind: 'text', text: 'OK.' }
}

// The demo profile's own patch layer: the preset's children are configured by id. A small
// context window and retained budget let a short demo session show the palace at work.
const PROFILE_PATCH = `# dsh-memory demo: configure the preset's rows by id (see the README).
- id: memory-preset-palace
  config:
    retainFraction: 0.02
    recallStrength: medium
`

/**
 * Messages recall injected into one session, read from the host's own session log (so this
 * works with the real API too).
 */
async function recalledBlocks(sessionsRoot: string, sessionId: string): Promise<string[]> {
  return (await loggedUserMessages(sessionsRoot, { sessionId }))
    .filter((message) => message.source.plugin === 'memory-recall')
    .map((message) => message.text)
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true }).catch(() => [])) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) await walk(path)
      else out.push(path)
    }
  }
  await walk(dir)
  return out.sort()
}

const say = (line = ''): void => void process.stdout.write(`${line}\n`)
const clip = (text: string, max = 110) => {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

async function showStore(store: MemoryStore, root: string): Promise<void> {
  say()
  say('━━ Captured (L0): every human prompt and assistant reply, by session')
  for (const conversation of (await store.conversations.list({ limit: 100 })).reverse()) {
    say(`  session ${conversation.id} in ${relative(root, conversation.workspace)}`)
    for (const message of await store.messages.list({ conversationId: conversation.id })) say(`    ${message.role.padEnd(9)} ${clip(message.text, 100)}`)
  }
  say()
  say('━━ Distilled (L1): memories the model extracted in the background, per workspace')
  for (const memory of await store.memories.list({ limit: 100, orderBy: 'created' })) {
    say(`  ${memory.kind.padEnd(11)} ${memory.scope === 'global' ? 'global' : relative(root, memory.workspace ?? '')}`.padEnd(34) + ` ${clip(memory.text, 80)}`)
  }
}

async function main(): Promise<void> {
  // DSH_MEMORY_DEMO_DIR moves the throwaway home (the end-to-end test of the demo uses it).
  const root = process.env.DSH_MEMORY_DEMO_DIR?.trim() || join(REPO_ROOT, '.demo')
  await rm(root, { recursive: true, force: true })
  await mkdir(root, { recursive: true })
  const live = Boolean(process.env.DEEPSEEK_API_KEY)
  const server = live ? undefined : await startModelServer({ responder: scriptedModel })
  try {
    say('dsh-memory demo: long-term memory for DeepSeek Harness, in the real DSH host')
    say(live ? '  model: the real DeepSeek API (DEEPSEEK_API_KEY is set)' : `  model: an offline scripted model at ${server!.url} (set DEEPSEEK_API_KEY to use the real API)`)
    say('  packing every @dsh-memory package with npm pack …')
    const names = ['store', 'capture', 'distill', 'recall', 'cue-bank', 'palace', 'tree', 'preset'].map((id) => `@dsh-memory/${id}`)
    const tarballs = await packWorkspaces(names, join(root, 'packs'))
    const home = new DshHome(join(root, 'dsh-home'))
    say('  installing the preset into a fresh profile: dsh plugin --profile demo add @dsh-memory/preset …')
    const profileDir = await home.createProfile('demo', tarballs, ['@dsh-memory/preset'])
    await writeFile(join(profileDir, 'cordis.patch.yml'), PROFILE_PATCH)
    say(`  profile patch layer (${relative(root, join(profileDir, 'cordis.patch.yml'))}) overrides the preset's palace row by id`)

    for (const [index, step] of STORY.entries()) {
      const cwd = join(root, 'work', step.workspace)
      say()
      say(`▶ session ${index + 1} in ${step.workspace} (${step.shows})`)
      say(`  user:      ${clip(step.prompt, 100)}`)
      const result = await home.run({
        profile: 'demo',
        cwd,
        args: [step.prompt],
        ...(server ? { modelUrl: server.url } : {}),
        // A small window so the palace's retained budget is small; the real model has its own.
        ...(live ? {} : { patch: '- id: llm-deepseek\n  config:\n    retryPolicy:\n      mode: normal\n      maxRetries: 0\n    models:\n      - id: deepseek-v4-flash\n        contextWindow: 32000\n' }),
        env: live ? { DEEPSEEK_API_KEY: process.env.DEEPSEEK_API_KEY! } : { DEEPSEEK_API_KEY: 'sk-offline-demo-key-0000000000' },
        timeoutMs: 300_000,
      })
      if (result.code !== 0) throw new Error(`dsh exited with ${result.code}\n${result.stdout}\n${result.stderr}`)
      say(`  assistant: ${clip(result.stdout, 200)}`)
    }

    const dataDir = join(home.dir, 'memory')
    const store = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
    try {
      await showStore(store, join(root, 'work'))
    } finally {
      await store.close()
    }

    say()
    say('━━ Recalled: what session 4’s request carried (fenced as untrusted data, never captured back)')
    const asked = await (async () => {
      const reader = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
      try {
        return (await reader.search.messages('database deploy day', { role: 'user', limit: 20 })).find((hit) => hit.message.text === STORY[3]!.prompt)?.message.conversationId
      } finally {
        await reader.close()
      }
    })()
    const blocks = asked ? await recalledBlocks(join(home.dir, 'sessions'), asked) : []
    if (blocks.length === 0) say('  (nothing was recalled)')
    for (const block of blocks) for (const line of block.split('\n')) say(`  ${clip(line, 150)}`)

    say()
    say('━━ Archived: the memory palace in the shop-api workspace (verbatim turns, by category)')
    const palace = join(root, 'work', WORKSPACES.shop, 'memory-palace')
    const files = (await filesUnder(palace)).filter((file) => file.endsWith('.md'))
    if (files.length === 0) say('  (nothing was archived)')
    for (const file of files) {
      say(`  ${relative(join(root, 'work'), file)}`)
      const text = await readFile(file, 'utf8')
      const quoted = text.split('\n').find((line) => line.includes('Release notes for shop API'))
      if (quoted) say(`    ${clip(quoted, 120)}`)
    }

    say()
    say('━━ The dsh-memory CLI on the same data dir (no host needed): dsh-memory status')
    // The built CLI of this repo, run as a user runs it (npx dsh-memory status).
    const status = spawnSync(process.execPath, [join(REPO_ROOT, 'apps', 'cli', 'dist', 'bin.js'), 'status', '--data-dir', dataDir], { stdio: 'inherit' })
    if (status.status !== 0) throw new Error(`dsh-memory status exited with ${status.status}`)

    say()
    say(`Data dir to inspect: ${dataDir}`)
    say(`  npx dsh-memory search PostgreSQL --data-dir ${dataDir}`)
    say(`  npx dsh-memory export --format markdown --data-dir ${dataDir}`)
    if (existsSync(palace)) say(`  memory palace files: ${palace}`)
  } finally {
    await server?.close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
