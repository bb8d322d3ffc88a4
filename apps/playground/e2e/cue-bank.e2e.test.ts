import { join } from 'node:path'
import { DEFAULT_CUE_BANK_OPTIONS, extractKeywords, openCueRepository, rankCues, type Cue, type Idiom } from '@dsh-memory/cue-bank'
import { openMemoryStore } from '@dsh-memory/store'
import { beforeAll, describe, expect, it } from 'vitest'
import type { DshRunResult } from '../src/host.js'
import { contentText, lastUserText, type LoggedRequest } from '../src/model-server.js'
import { expectBootRejects, useHostProfile } from './helpers.js'
import { followupOverlay, writeFollowupPlugin } from './support/cue-bank-followup.js'
import { startEmbeddingEndpoint } from './support/reliability-embeddings.js'

const BLOCK = '<memory-cues source="cue-bank">'

const TOPIC_A = '我们决定把 PostgreSQL 主数据库迁移到 16 版本，所有索引都要重建'
const SWITCH_B = 'PostgreSQL 主数据库迁移之后，索引重建要多久？'
const CONTINUE_B = 'PostgreSQL 主数据库迁移时扩展和索引怎么处理？'
const UNRELATED = 'Recommend a pasta recipe for dinner tonight'

/** One axis per concept: texts about the same thing point the same way without sharing a word. */
const CONCEPTS: readonly (readonly string[])[] = [
  ['咖啡', 'gaggia', 'espresso', 'latte', 'ラテ', 'コーヒー', 'エスプレッソ'],
  ['deploy', '部署', 'デプロイ', 'release'],
  ['猫', 'cat', 'ねこ'],
]
function conceptVector(text: string): number[] {
  const lower = text.toLowerCase()
  return [...CONCEPTS.map((words) => (words.some((word) => lower.includes(word)) ? 1 : 0)), 0.01]
}

function sessionOf(request: LoggedRequest): string {
  return String(request.headers['x-deepseek-harness-session-id'] ?? '')
}

/** How many wake blocks the model was shown in one request (history included). */
function blocks(request: LoggedRequest): number {
  return request.body.messages.reduce((count, message) => count + contentText(message.content).split(BLOCK).length - 1, 0)
}

describe('cue-bank in the real DSH host', () => {
  let alpha: string

  const chatSince = (start: number) => hosted.server.requests.slice(start).filter((request) => request.purpose === 'chat')

  async function run(prompt: string, options: { cwd?: string; patch?: string } = {}): Promise<{ result: DshRunResult; requests: LoggedRequest[] }> {
    const start = hosted.server.requests.length
    const result = await hosted.home.run({ profile: 'cue-bank', cwd: options.cwd ?? alpha, modelUrl: hosted.server.url, args: [prompt], patch: options.patch })
    expect(result.stderr).not.toMatch(/Error/)
    expect(result.code).toBe(0)
    return { result, requests: chatSince(start) }
  }

  const hosted = useHostProfile('cue-bank', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/cue-bank'],
    responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` }),
  })

  beforeAll(async () => {
    alpha = join(hosted.root, 'work', 'alpha')
    // Installed the way a user installs: `dsh plugin --profile cue-bank add <tarballs>`. Capture is
    // not needed by the cue bank; it is installed so cue_bank_open can show recorded L0 turns.
    })

  it('session B switching to session A’s topic gets the cue block; continuing on it gets no second block; an unrelated topic and another workspace get none', async () => {
    // Session A talks about one topic; its cues are written at turn end.
    const a = await run(TOPIC_A)
    expect(a.requests.every((request) => blocks(request) === 0)).toBe(true)
    const sessionA = sessionOf(a.requests[0]!)
    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') })
    try {
      const repository = await openCueRepository(store)
      const cues = repository.listCues(undefined)
      repository.close()
      expect(cues.map((cue) => cue.level).sort()).toEqual(['conversation', 'task'])
      expect(cues.every((cue) => cue.sessionId === sessionA && cue.partition === `workspace:${alpha}`)).toBe(true)
      expect(cues[0]!.keywords.map((keyword) => keyword.word)).toEqual(expect.arrayContaining(['postgresql', '主数据库', '索引']))
    } finally {
      await store.close()
    }

    // Session B starts on something else, then switches to A's topic, then continues on it: three
    // prompts in one session (a support plugin sends the second and third through agent.followup).
    const plugin = await writeFollowupPlugin(hosted.root)
    const b = await run(UNRELATED, { patch: followupOverlay(plugin, [SWITCH_B, CONTINUE_B]) })
    expect(b.requests).toHaveLength(3)
    const [openRequest, switchRequest, continueRequest] = b.requests as [LoggedRequest, LoggedRequest, LoggedRequest]
    expect(new Set(b.requests.map(sessionOf)).size).toBe(1)
    expect(sessionOf(switchRequest)).not.toBe(sessionA)
    expect(lastUserText(openRequest.body)).toBe(UNRELATED)
    expect(blocks(openRequest)).toBe(0)
    // The switch: the request carries the cue block, naming session A.
    expect(lastUserText(switchRequest.body)).toBe(SWITCH_B)
    expect(blocks(switchRequest)).toBe(1)
    const block = switchRequest.body.messages.map((message) => contentText(message.content)).find((text) => text.includes(BLOCK))!
    expect(block).toContain(`session: ${sessionA}`)
    expect(block).toMatch(/matched: .*postgresql/)
    expect(block).toContain('detail: User: 我们决定把 PostgreSQL')
    expect(block).toContain('call cue_bank_open')
    const switchIndex = switchRequest.body.messages.findIndex((message) => contentText(message.content) === SWITCH_B)
    expect(switchRequest.body.messages.slice(switchIndex).some((message) => contentText(message.content).includes(BLOCK))).toBe(true)
    // Continuing on the topic: the first block stays in history, no second one is added.
    expect(lastUserText(continueRequest.body)).toBe(CONTINUE_B)
    expect(blocks(continueRequest)).toBe(1)
    const continueIndex = continueRequest.body.messages.findIndex((message) => contentText(message.content) === CONTINUE_B)
    expect(continueRequest.body.messages.slice(continueIndex).some((message) => contentText(message.content).includes('memory-cues'))).toBe(false)

    // An unrelated topic in a new session of the same workspace: nothing.
    const c = await run('How do I sharpen a kitchen knife?')
    expect(c.requests.length).toBeGreaterThan(0)
    expect(c.requests.every((request) => blocks(request) === 0)).toBe(true)

    // A's topic from another workspace: its cues are not that workspace's.
    const d = await run(SWITCH_B, { cwd: join(hosted.root, 'work', 'beta') })
    expect(d.requests.every((request) => blocks(request) === 0)).toBe(true)

    // The cue the block showed was marked as woken in the store.
    const shown = [...block.matchAll(/cue: ([ct]-[0-9a-f-]+)/g)].map((match) => match[1]!)
    expect(shown.length).toBeGreaterThan(0)
    const after = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') })
    try {
      const repository = await openCueRepository(after)
      const woken = await Promise.all(shown.map((id) => repository.getCue(id)))
      repository.close()
      expect(woken.every((cue) => cue?.sessionId === sessionA && cue.hitCount >= 1)).toBe(true)
    } finally {
      await after.close()
    }
  })

  it('the model can open a woken cue’s source with cue_bank_open, and the next step shows no second block', async () => {
    let asked: { cueId: string; session: string } | undefined
    hosted.server.setResponder((request) => {
      if (request.purpose !== 'chat') return undefined
      const toolResult = request.body.messages.find((message) => message.role === 'tool')
      if (toolResult) return { kind: 'text', text: `Source: ${contentText(toolResult.content).slice(0, 200)}` }
      const block = request.body.messages.map((message) => contentText(message.content)).find((text) => text.includes(BLOCK))
      const line = block ? /cue: ([ct]-[0-9a-f-]+) · session: (\S+)/.exec(block) : null
      if (line) {
        asked = { cueId: line[1]!, session: line[2]! }
        return { kind: 'tools', calls: [{ name: 'cue_bank_open', arguments: { cueId: asked.cueId } }] }
      }
      return { kind: 'text', text: 'No memory.' }
    })
    const e = await run('PostgreSQL 主数据库迁移的索引重建计划是什么？')
    expect(e.requests).toHaveLength(2)
    const [first, second] = e.requests as [LoggedRequest, LoggedRequest]
    expect(blocks(first)).toBe(1)
    expect(blocks(second)).toBe(1)
    const tool = second.body.messages.find((message) => message.role === 'tool')!
    const opened = contentText(tool.content)
    // The opened cue names the session the block named, and shows the turn it came from.
    expect(opened).toMatch(new RegExp(`^Cue ${asked!.cueId} \\[(conversation|task)\\] from session ${asked!.session}, created \\d{4}-\\d{2}-\\d{2}`))
    // Capture recorded the source turns as L0 messages; the tool shows them verbatim.
    expect(opened).toContain('Source turns (recorded conversation):')
    expect(opened).toMatch(/\[turn \d+, \d{4}-\d{2}-\d{2}\] user: (PostgreSQL 主数据库迁移|我们决定把 PostgreSQL 主数据库迁移)/)
    expect(opened).toMatch(/\] assistant: Noted: /)
    expect(e.result.stdout).toContain('Source: Cue')
  })

  it("partition 'user' gives one person one bank across workspaces, and inject.format 'reference' shows the reference's block", async () => {
    hosted.server.setResponder((request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` }))
    const patch = '- id: memory-cue-bank\n  config:\n    partition: user\n    userId: e2e-person\n    inject:\n      format: reference\n'
    const topic = '我们决定用 Redis 集群做会话缓存，过期时间设为 30 分钟'
    const back = 'Redis 集群的会话缓存过期时间是多少？'
    await run(topic, { cwd: join(hosted.root, 'work', 'gamma'), patch })
    // Another project of the same person: the topic wakes, in the reference's own words.
    const other = await run(back, { cwd: join(hosted.root, 'work', 'delta'), patch })
    const texts = other.requests.flatMap((request) => request.body.messages.map((message) => contentText(message.content)))
    const block = texts.find((text) => text.includes('📌 记忆唤醒（cue-bank）'))
    expect(block).toBeDefined()
    expect(block).toContain('<system-reminder>')
    expect(block).toMatch(/- \[(conversation|task)\] .*Redis 集群/)
    expect(block).toMatch(/ {2}触点命中: .*(redis|集群|会话缓存)/i)
    expect(block).toMatch(/ {2}最近提及: \d{4}-\d{2}-\d{2}/)
    expect(block).toContain('  细节: ')
    expect(block).toContain('查看原始对话：调用 cue_bank_open')
    expect(texts.some((text) => text.includes(BLOCK))).toBe(false)
    // The cue lives in the person's partition, not in either workspace's.
    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') })
    try {
      const repository = await openCueRepository(store)
      const cues = repository.listCues(['user:e2e-person'])
      repository.close()
      expect(cues.some((cue) => cue.summary.includes('Redis 集群'))).toBe(true)
    } finally {
      await store.close()
    }
    // With the default (per-workspace) bank, a third workspace does not see it.
    const isolated = await run(back, { cwd: join(hosted.root, 'work', 'epsilon') })
    expect(isolated.requests.every((request) => blocks(request) === 0 && !request.body.messages.some((message) => contentText(message.content).includes('📌')))).toBe(true)
  })

  /** The partition's cues and idioms as the store holds them after the runs so far. */
  async function bankOf(partition: string): Promise<{ cues: Cue[]; idioms: Idiom[] }> {
    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') })
    try {
      const repository = await openCueRepository(store)
      const bank = { cues: repository.listCues([partition]), idioms: repository.listIdioms([partition]) }
      repository.close()
      return bank
    } finally {
      await store.close()
    }
  }

  /** The wake block of a run's first chat request, if any. */
  const blockOf = (requests: readonly LoggedRequest[]): string | undefined =>
    requests[0]?.body.messages.map((message) => contentText(message.content)).find((text) => text.includes(BLOCK))

  it('001 idioms: a Chinese expression the user repeats across topics wakes the right cue with the idiom hint; a Japanese paraphrase wakes its topic', async () => {
    hosted.server.setResponder((request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` }))
    const cwd = join(hosted.root, 'work', 'idioms')
    // Two topics in two sessions, both said with the user's habit "形成闭环"; a third in Japanese.
    const reimburse = sessionOf((await run('报销需求要形成闭环，从提单、审批到打款都要能追踪', { cwd })).requests[0]!)
    await run('监控告警也要形成闭环，从告警到修复都要有记录', { cwd })
    const cat = sessionOf((await run('うちの猫の年糕が最近ご飯を食べない', { cwd })).requests[0]!)
    // The expression recurs across two topics: the bank learnt it as this user's idiom.
    const { idioms } = await bankOf(`workspace:${cwd}`)
    expect(idioms.map((idiom) => idiom.word)).toEqual(expect.arrayContaining([expect.stringMatching(/闭环/)]))

    // A later session comes back to the first topic in the user's own words.
    const back = blockOf((await run('报销这块还是没闭环', { cwd })).requests)
    expect(back).toBeDefined()
    expect(/cue: \S+ · session: (\S+)/.exec(back!)?.[1]).toBe(reimburse)
    expect(back).toMatch(/matched: .*报销/)
    expect(back).toMatch(/User idioms: .*闭环/)

    // A Japanese paraphrase of the third topic wakes that topic first.
    const paraphrase = blockOf((await run('年糕がまたご飯を残している', { cwd })).requests)
    expect(paraphrase).toBeDefined()
    expect(/cue: \S+ · session: (\S+)/.exec(paraphrase!)?.[1]).toBe(cat)
    expect(paraphrase).toMatch(/matched: .*年糕/)
    expect(paraphrase).toContain('detail: User: うちの猫の年糕が最近ご飯を食べない')
  })

  it('001 vector matching: with an embedding endpoint, a message that shares no keyword with a cue wakes it by meaning', async () => {
    hosted.server.setResponder(() => ({ kind: 'text', text: 'Noted.' }))
    const embeddings = await startEmbeddingEndpoint('ok', conceptVector)
    try {
      const cwd = join(hosted.root, 'work', 'vectors')
      const dimensions = CONCEPTS.length + 1
      const patch = `- id: memory-cue-bank\n  config:\n    matchMode: auto\n    embedding:\n      baseURL: ${embeddings.url}\n      apiKey: e2e-key\n      model: concepts\n      dimensions: ${dimensions}\n      timeoutMs: 20000\n      waitMs: 20000\n`
      const topic = '我的 Gaggia 咖啡机在冲煮头漏水'
      const query = '家でラテを美味しく淹れるコツは？'
      const a = sessionOf((await run(topic, { cwd, patch })).requests[0]!)
      // The topic's cues were embedded by the endpoint before the run ended.
      const { cues } = await bankOf(`workspace:${cwd}`)
      expect(cues.length).toBeGreaterThan(0)
      expect(cues.every((cue) => cue.sessionId === a && cue.embedding?.length === dimensions)).toBe(true)
      expect(embeddings.requests.some((request) => request.input.some((text) => text.includes('Gaggia 咖啡机')))).toBe(true)
      // The cue bank's own keyword matcher finds nothing for the query in these cues.
      const { inject, topic: detection, decay } = DEFAULT_CUE_BANK_OPTIONS
      const byKeywords = rankCues({
        query: extractKeywords(query, { max: detection.maxKeywords }),
        cues,
        now: Date.now(),
        mode: 'keyword',
        maxCues: inject.maxCues,
        minScore: inject.minScore,
        minVectorScore: inject.minVectorScore,
        halfLifeDays: decay.halfLifeDays,
      })
      expect(byKeywords).toEqual([])

      // In the host, the query's embedding wakes the topic: a semantic match, no keyword hit.
      const b = await run(query, { cwd, patch })
      const block = blockOf(b.requests)
      expect(block).toBeDefined()
      expect(/cue: \S+ · session: (\S+)/.exec(block!)?.[1]).toBe(a)
      expect(block).toContain('matched: (semantic match)')
      expect(block).toContain(`detail: User: ${topic}`)
      expect(embeddings.requests.some((request) => request.input.some((text) => text.includes('ラテ')))).toBe(true)
    } finally {
      await embeddings.close()
    }
  })

  it('fails boot with a message naming the field when the cue-bank config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-cue-bank\n  config:\n    topic:\n      switchThreshold: 7\n', [/switchThreshold/])
  })
})
