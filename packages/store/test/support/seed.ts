/**
 * Stores filled the same way for tests that share them: the stats tests (contract and the
 * SQLite-only maintenance checks) and the export/import tests (contract and SQLite-only).
 */
import type { MemoryStore } from '../../src/index.ts'

export const WS_SHOP = '/home/ユーザー/店舗'
export const WS_BLOG = '/srv/博客'

/** A small store spread over two days and two workspaces (CJK paths and text); `clock` drives the store's `now`. */
export async function seedTwoDays(store: MemoryStore, clock: { set: (t: number) => void }): Promise<void> {
  await store.conversations.ensure({ id: 's1', workspace: WS_SHOP })
  await store.conversations.ensure({ id: 's2', workspace: WS_BLOG })
  await store.conversations.ensure({ id: 's3', workspace: '' })
  await store.messages.append({ conversationId: 's1', hostMessageId: 'h1', role: 'user', text: '周三发布商店 API' })
  await store.messages.append({ conversationId: 's1', hostMessageId: 'h2', role: 'assistant', text: '了解しました' })
  await store.messages.append({ conversationId: 's2', hostMessageId: 'h3', role: 'user', text: 'ブログは R2 でホストする' })
  const old = await store.memories.add({ kind: 'fact', text: 'Shop API deploys on Wednesdays', scope: 'workspace', workspace: WS_SHOP })
  await store.memories.supersede(old.id, { text: '商店 API 周三发布' })
  await store.memories.add({ kind: 'preference', text: 'Prefers small pull requests', scope: 'global' })
  clock.set(Date.UTC(2026, 11, 1, 9))
  await store.memories.add({ kind: 'fact', text: 'ブログは R2', scope: 'workspace', workspace: WS_BLOG })
  await store.memories.add({ kind: 'fact', text: 'session note', scope: 'session', sessionId: 's3' })
  await store.messages.append({ conversationId: 's2', hostMessageId: 'h4', role: 'assistant', text: 'R2 に置きます' })
  await store.scenes.add({ title: '发布', summary: '周三发布', scope: 'workspace', workspace: WS_SHOP })
  await store.persona.put({ scope: 'global', text: '# 用户\n简洁' })
}

/** Every line of an export. */
export async function collect(iterable: AsyncIterable<string>): Promise<string[]> {
  const lines: string[] = []
  for await (const line of iterable) lines.push(line)
  return lines
}

/** A store holding one or more of every record type, with history, embeddings and flags. */
export async function populate(store: MemoryStore): Promise<void> {
  await store.conversations.ensure({ id: 'sess-1', workspace: '/repo', title: 'Set up CI' })
  await store.conversations.ensure({ id: 'sess-2', workspace: '' })
  await store.conversations.end('sess-1', 99_000)
  for (let i = 0; i < 3; i++) {
    await store.messages.append({ conversationId: 'sess-1', hostMessageId: `m${i}`, role: i % 2 ? 'assistant' : 'user', text: `message ${i} 关于数据库`, turn: i, sourceIds: [`e${i}`] })
  }
  await store.messages.append({ conversationId: 'sess-2', hostMessageId: 'only', role: 'user', text: 'hello', flags: { source: 'test' } })
  const v1 = await store.memories.add({ kind: 'preference', text: 'Likes tabs', scope: 'global', embedding: new Float32Array([1, 0.5, -2]), embeddingModel: 'e1' })
  const v2 = await store.memories.supersede(v1.id, { text: 'Likes spaces' })
  await store.memories.add({ kind: 'fact', text: 'Repo uses pnpm', scope: 'workspace', workspace: '/repo', sourceMessageIds: ['m1'], priority: 3, flags: { a: 1 } })
  await store.memories.add({ kind: 'episode', text: 'Fixed flaky test', scope: 'session', sessionId: 'sess-1', workspace: '/repo' })
  await store.memories.touchRecalled([v2.id], 123_000)
  await store.scenes.add({ title: 'Editor setup', summary: 'Tabs vs spaces history', scope: 'global', memoryIds: [v1.id, v2.id] })
  await store.persona.put({ scope: 'global', text: '# User\n- terse' })
  await store.persona.put({ scope: 'global', text: '# User\n- terse\n- likes spaces' })
  await store.persona.put({ scope: 'workspace', workspace: '/repo', text: 'Strict lint here' })
}

/** Everything a store holds, as its list methods return it. */
export async function snapshot(store: MemoryStore) {
  return {
    conversations: await store.conversations.list({ limit: 1_000 }),
    messages: await store.messages.list({ limit: 1_000 }),
    memories: await store.memories.list({ includeSuperseded: true, limit: 1_000 }),
    scenes: await store.scenes.list({ limit: 1_000 }),
    persona: await store.persona.list(),
  }
}
