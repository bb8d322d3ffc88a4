import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { DshHome, REPO_ROOT, packWorkspaces } from './host.js'
import { lastUserText, startModelServer } from './model-server.js'

/**
 * The demo: boot the real DSH host headless with the memory plugins installed from packed
 * tarballs, run a short multi-session story against the offline scripted model (or the real
 * DeepSeek API when DEEPSEEK_API_KEY is set), and show what the store holds afterwards.
 */
async function main(): Promise<void> {
  const root = join(REPO_ROOT, '.demo')
  await rm(root, { recursive: true, force: true })
  await mkdir(root, { recursive: true })
  const live = Boolean(process.env.DEEPSEEK_API_KEY)
  const server = live
    ? undefined
    : await startModelServer({
        responder: (request) => ({ kind: 'text', text: scriptedReply(lastUserText(request.body)) }),
      })
  const say = (line = ''): void => void process.stdout.write(`${line}\n`)
  try {
    say('dsh-memory demo')
    say(live ? '  model: the real DeepSeek API (DEEPSEEK_API_KEY is set)' : `  model: offline scripted model at ${server!.url}`)
    say('  packing @dsh-memory/store and @dsh-memory/capture …')
    const tarballs = await packWorkspaces(['@dsh-memory/store', '@dsh-memory/capture'], join(root, 'packs'))
    const home = new DshHome(join(root, 'dsh-home'))
    say('  installing them into a fresh DSH profile with `dsh plugin --profile demo add` …')
    await home.createProfile('demo', tarballs, ['@dsh-memory/store', '@dsh-memory/capture'])

    const story: [workspace: string, prompt: string][] = [
      ['shop-api', 'We are building the shop API in TypeScript; we decided to use PostgreSQL, not MySQL.'],
      ['shop-api', 'Deploys happen on Tuesdays only. Please remember that.'],
      ['blog', '我的博客用 Astro 搭建，部署在 Cloudflare Pages 上。'],
    ]
    for (const [workspace, prompt] of story) {
      say()
      say(`▶ session in ${workspace}: ${prompt}`)
      const result = await home.run({
        profile: 'demo',
        cwd: join(root, 'work', workspace),
        args: [prompt],
        ...(server ? { modelUrl: server.url } : {}),
        env: live ? {} : { DEEPSEEK_API_KEY: 'sk-offline-demo-key-0000000000' },
        timeoutMs: 180_000,
      })
      if (result.code !== 0) throw new Error(`dsh exited with ${result.code}\n${result.stderr}`)
      say(`  assistant: ${result.stdout.trim().split('\n').join('\n             ')}`)
    }

    const dbPath = join(home.dir, 'memory', 'memory.db')
    const store = openMemoryStore({ path: dbPath })
    try {
      say()
      say('What the store captured (L0):')
      for (const conversation of await store.conversations.list()) {
        say(`  ${conversation.id} in ${conversation.workspace}`)
        for (const message of await store.messages.list({ conversationId: conversation.id })) {
          say(`    [turn ${message.turn}] ${message.role.padEnd(9)} ${message.text.slice(0, 100)}`)
        }
      }
      for (const [query, workspace] of [
        ['PostgreSQL', join(root, 'work', 'shop-api')],
        ['部署', join(root, 'work', 'blog')],
      ] as const) {
        say()
        say(`Search "${query}" in ${workspace}:`)
        for (const hit of await store.search.messages(query, { workspace, limit: 3 })) {
          say(`  ${hit.score.toFixed(2)}  ${hit.message.role}: ${hit.message.text.slice(0, 90)}`)
        }
      }
    } finally {
      await store.close()
    }
    say()
    say(`Data dir to inspect: ${join(home.dir, 'memory')}`)
  } finally {
    await server?.close()
  }
}

function scriptedReply(prompt: string): string {
  if (/PostgreSQL/.test(prompt)) return 'Got it: PostgreSQL for the shop API, TypeScript throughout.'
  if (/Tuesday/.test(prompt)) return 'Understood, deploys only on Tuesdays.'
  if (/博客/.test(prompt)) return '明白了：博客使用 Astro，部署在 Cloudflare Pages。'
  return 'OK.'
}

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
  process.exit(1)
})
