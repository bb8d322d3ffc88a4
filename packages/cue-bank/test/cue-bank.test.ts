import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { partitionKey, type CueWokenEvent, type CueWrittenEvent } from '../src/core/cue-bank-contract.js'
import { CueBank } from '../src/core/cue-bank.js'
import { isCueBankError } from '../src/core/errors.js'
import { resolveCueBankOptions } from '../src/core/options.js'
import { openCueRepository } from '../src/core/store-cue-repository.js'
import { backends } from '../../store/test/contract/backends.js'
import { Clock, cueFixture, DAY, openHarness, session, T0, talk, tempDir, type Harness, type HarnessLocation } from './fixtures.js'

const PG_USER = '我们决定把 PostgreSQL 主数据库迁移到 16 版本，索引要重建'
const PG_REPLY = '好的：先在预发环境做 pg_upgrade 演练，重建索引后再切换主数据库。'

describe.each(backends)('the cue bank engine on a real store ($name)', (backend) => {
  let temp: ReturnType<typeof tempDir>
  /** Where this test's store is: a SQLite file in `temp`, or a fresh PostgreSQL schema. */
  let where: HarnessLocation
  let h: Harness
  const written: CueWrittenEvent[] = []
  const woken: CueWokenEvent[] = []

  beforeEach(async () => {
    temp = tempDir()
    where = backend.name === 'sqlite' ? temp.dir : backend.fresh()
    written.length = 0
    woken.length = 0
    h = await openHarness(where, {}, { hooks: { onWritten: (e) => written.push(e), onWoken: (e) => woken.push(e) }, openTool: 'cue_bank_open' })
  })
  afterEach(async () => {
    await h.close()
    temp.remove()
  })

  describe('write side', () => {
    it('writes a conversation cue and a task cue per turn, with keywords, dimensions, sources and times', async () => {
      const a = session('/work/alpha')
      const result = await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      expect(result?.cueIds).toHaveLength(2)
      expect(written).toHaveLength(1)
      const cues = h.bank.list({ workspace: '/work/alpha' })
      const conversation = cues.find((c) => c.level === 'conversation')!
      const task = cues.find((c) => c.level === 'task')!
      expect(conversation.keywords.map((k) => k.word)).toEqual(expect.arrayContaining(['postgresql', '主数据库', '索引']))
      expect(conversation.keywords.every((k) => k.score > 0 && k.score <= 1)).toBe(true)
      expect(conversation).toMatchObject({
        partition: 'workspace:/work/alpha',
        sessionId: a.id,
        turn: 1,
        refSessions: [a.id],
        sourceMessageIds: [`u-${a.id}-1`, `a-${a.id}-1`],
        createdAt: T0,
        lastMentionedAt: T0,
        lastTouchedAt: T0,
        hitCount: 0,
        dimensions: { trigger: 'keywords', perspective: 'conversation', language: 'zh', workspace: '/work/alpha' },
      })
      expect(conversation.summary).toBe(PG_USER)
      expect(conversation.detail).toContain('Assistant: 好的')
      expect(task).toMatchObject({ level: 'task', turn: 1, dimensions: { perspective: 'task' } })
    })

    it('merges later turns into the session task cue and never merges a replayed turn twice', async () => {
      const a = session()
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      h.clock.advance(60_000)
      await talk(h.bank, a, 2, '索引重建之后还要做 VACUUM ANALYZE 吗', '要，迁移后统计信息是空的。')
      const task = h.bank.list({ level: 'task' })[0]!
      expect(task.turn).toBe(2)
      expect(task.keywords.map((k) => k.word)).toEqual(expect.arrayContaining(['postgresql', 'vacuum', 'analyze']))
      expect(task.sourceMessageIds).toHaveLength(4)
      expect(task.lastMentionedAt).toBe(T0 + 60_000)
      expect(task.createdAt).toBe(T0)
      expect(task.detail).toMatch(/^First request: 我们决定把 PostgreSQL/)
      expect(h.bank.list({ level: 'conversation' })).toHaveLength(2)
      const replay = await h.bank.recordTurn(a, { turn: 2, user: [{ id: 'x', text: '索引重建之后还要做 VACUUM ANALYZE 吗' }], assistant: [] })
      expect(replay).toBeUndefined()
      expect(h.bank.list()).toHaveLength(3)
      expect(h.bank.list({ level: 'task' })[0]!.sourceMessageIds).toHaveLength(4)
    })

    it('skips turns without a human message or without keywords, and redacts secrets', async () => {
      const a = session()
      expect(await h.bank.recordTurn(a, { turn: 1, user: [], assistant: [{ id: 'a', text: 'A reply with no prompt about Kubernetes' }] })).toBeUndefined()
      expect(await h.bank.recordTurn(a, { turn: 2, user: [{ id: 'u', text: '好的 😀 ok' }], assistant: [] })).toBeUndefined()
      await h.bank.recordTurn(a, { turn: 3, user: [{ id: 'u3', text: 'Deploy with key sk-abcdefghijklmnopqrstuvwxyz0123 to the staging cluster' }], assistant: [] })
      const cue = h.bank.list({ level: 'conversation' })[0]!
      expect(cue.detail).not.toContain('sk-abcdefghijklmnopqrstuvwxyz0123')
      expect(cue.detail).toContain('[REDACTED:api-key]')
      expect(cue.keywords.map((k) => k.word)).not.toContain('redacted')
      expect(cue.keywords.map((k) => k.word)).toEqual(expect.arrayContaining(['deploy', 'staging', 'cluster']))
    })
  })

  describe('wake side', () => {
    it('wakes the matching cues of another session on a topic switch, with session, date, matches and detail', async () => {
      const a = session('/work/alpha')
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      h.clock.advance(2 * DAY)
      const b = session('/work/alpha')
      await talk(h.bank, b, 1, 'Recommend a pasta recipe for tonight', 'Try carbonara.')
      const decision = h.bank.observeUserMessage(b, { id: 'm2', text: 'PostgreSQL 主数据库迁移之后索引还要重建吗？' }, 2)!
      expect(decision.switched).toBe(true)
      expect(decision.overlap).toBe(0)
      expect(decision.scanned).toBe(true)
      expect(decision.via).toBe('keyword')
      // A one-turn session's task cue repeats its conversation cue: it is shown once.
      expect(decision.cues.map((c) => c.cue.sessionId)).toEqual([a.id])
      const text = h.bank.injection(b.id)
      expect(text).toBe(decision.text)
      expect(text).toContain(`session: ${a.id} · 2026-08-15`)
      expect(text).toContain('last mentioned: 2026-08-15')
      expect(text).toMatch(/matched: .*postgresql/)
      expect(text).toContain('detail: User: 我们决定把 PostgreSQL')
      expect(text).toContain('call cue_bank_open')
      await h.bank.settle(b.id)
      await h.bank.whenIdle()
      expect(woken).toEqual([{ partition: 'workspace:/work/alpha', sessionId: b.id, turn: 2, cueIds: decision.cues.map((c) => c.cue.id), via: 'keyword' }])
      for (const ranked of decision.cues) {
        expect(await h.repository.getCue(ranked.cue.id)).toMatchObject({ hitCount: 1, lastTouchedAt: T0 + 2 * DAY })
      }
    })

    it('keeps the block as it is while the topic continues, and clears it on an unrelated switch', async () => {
      const a = session()
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      const b = session()
      const first = h.bank.observeUserMessage(b, { id: 'm1', text: 'PostgreSQL 主数据库迁移要注意什么' }, 1)!
      await h.bank.settle(b.id)
      expect(first.text).not.toBe('')
      await h.bank.recordTurn(b, { turn: 1, user: [{ id: 'm1', text: 'PostgreSQL 主数据库迁移要注意什么' }], assistant: [] })
      const same = h.bank.observeUserMessage(b, { id: 'm2', text: '主数据库迁移的时候 PostgreSQL 扩展怎么处理' }, 2)!
      expect(same.switched).toBe(false)
      expect(same.overlap).toBeGreaterThanOrEqual(0.25)
      expect(same.scanned).toBe(false)
      expect(h.bank.injection(b.id)).toBe(first.text)
      const ok = h.bank.observeUserMessage(b, { id: 'm3', text: '好的，继续 👍' }, 3)!
      expect(ok.switched).toBe(false)
      expect(h.bank.injection(b.id)).toBe(first.text)
      const unrelated = h.bank.observeUserMessage(b, { id: 'm4', text: 'Recommend a pasta recipe for tonight' }, 4)!
      expect(unrelated.switched).toBe(true)
      expect(unrelated.cues).toEqual([])
      expect(h.bank.injection(b.id)).toBe('')
      await h.bank.settle(b.id)
      await h.bank.whenIdle()
      expect(woken).toHaveLength(1)
    })

    it('does not wake a session with its own cues while they are still in its context', async () => {
      const a = session()
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      await talk(h.bank, a, 2, 'Recommend a pasta recipe for tonight', 'Carbonara.')
      const back = h.bank.observeUserMessage(a, { id: 'm3', text: 'PostgreSQL 主数据库迁移还有问题' }, 3)!
      expect(back.switched).toBe(true)
      expect(back.cues).toEqual([])
    })

    it("does not wake a session with another workspace's cues, unless configured global", async () => {
      const a = session('/work/alpha')
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      const other = session('/work/beta')
      expect(h.bank.observeUserMessage(other, { id: 'm', text: 'PostgreSQL 主数据库迁移' }, 1)!.cues).toEqual([])
      await h.close()

      h = await openHarness(where, { partition: 'global' })
      const g1 = session('/work/alpha')
      await talk(h.bank, g1, 1, PG_USER, PG_REPLY)
      const g2 = session('/work/beta')
      const decision = h.bank.observeUserMessage(g2, { id: 'm', text: 'PostgreSQL 主数据库迁移' }, 1)!
      expect(decision.partition).toBe('global')
      expect(decision.cues.map((c) => c.cue.sessionId)).toEqual([g1.id])
    })

    it('reads the global partition from workspace sessions when includeGlobal is on', async () => {
      const repository = h.repository
      // An imported task cue (written at T0, like every fixture cue).
      await repository.insertCue(
        cueFixture('g-1', 'global', {
          level: 'task',
          sessionId: 'import:g-1',
          turn: 0,
          summary: 'Kubernetes 集群部署规范',
          detail: 'Kubernetes 集群部署规范',
          keywords: [{ word: 'kubernetes', score: 0.5 }, { word: '集群', score: 0.5 }],
          dimensions: { trigger: 'keywords', perspective: 'task', imported: true },
          refSessions: ['feishu:ou_1'],
          sourceMessageIds: [],
        }),
      )
      expect(h.bank.observeUserMessage(session('/work/gamma'), { id: 'm', text: '部署到 Kubernetes 集群失败了' }, 1)!.cues.map((c) => c.cue.id)).toEqual(['g-1'])
      await h.close()
      h = await openHarness(where, { includeGlobal: false })
      expect(h.bank.observeUserMessage(session('/work/gamma'), { id: 'm', text: '部署到 Kubernetes 集群失败了' }, 1)!.cues).toEqual([])
    })

    it('honours scanEveryTurn, switchDetection and inject.enabled', async () => {
      const a = session()
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      await h.close()

      h = await openHarness(where, { topic: { scanEveryTurn: true } })
      const b = session()
      h.bank.observeUserMessage(b, { id: '1', text: 'PostgreSQL 主数据库迁移' }, 1)
      const again = h.bank.observeUserMessage(b, { id: '2', text: 'PostgreSQL 主数据库迁移的索引' }, 2)!
      expect(again.switched).toBe(false)
      expect(again.scanned).toBe(true)
      expect(again.cues.length).toBeGreaterThan(0)
      await h.close()

      h = await openHarness(where, { topic: { switchDetection: false } })
      expect(h.bank.observeUserMessage(session(), { id: '1', text: 'PostgreSQL 主数据库迁移' }, 1)!).toMatchObject({ switched: false, scanned: false, text: '' })
      await h.close()

      h = await openHarness(where, { inject: { enabled: false } })
      expect(h.bank.observeUserMessage(session(), { id: '1', text: 'PostgreSQL 主数据库迁移' }, 1)!).toMatchObject({ switched: true, scanned: false, text: '' })
    })

    it('continues a resumed session on its topic (the reference survives a restart)', async () => {
      const a = session()
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      const b = session()
      await talk(h.bank, b, 1, 'PostgreSQL 主数据库迁移要注意什么', 'Check extensions.')
      await h.close()
      h = await openHarness(where)
      const resumed = h.bank.observeUserMessage(b, { id: 'm2', text: 'PostgreSQL 主数据库迁移的扩展' }, 2)!
      expect(resumed.overlap).toBeGreaterThan(0.25)
      expect(resumed.switched).toBe(false)
    })
  })

  describe('idioms', () => {
    it('learns expressions the user repeats across topics and offers them with woken cues', async () => {
      await h.close()
      h = await openHarness(where, { extract: { userIdiomWindowTurns: 6, maxIdiomHints: 2 } })
      const s1 = session()
      await talk(h.bank, s1, 1, '飞书插件的审批流要形成闭环', 'OK')
      const s2 = session()
      await talk(h.bank, s2, 1, 'Kubernetes 部署流程也要闭环', 'OK')
      const s3 = session()
      await talk(h.bank, s3, 1, 'PostgreSQL 主数据库迁移的方案要闭环', 'OK')
      const idioms = h.bank.idioms()
      expect(idioms.map((i) => i.word)).toContain('闭环')
      // Used in all three turns: once inside 形成闭环, twice alone.
      expect(idioms.find((i) => i.word === '闭环')).toMatchObject({ turns: 3, firstSeen: T0 })
      expect(idioms.map((i) => i.word)).not.toContain('postgresql')
      const s4 = session()
      const decision = h.bank.observeUserMessage(s4, { id: 'm', text: '飞书插件的审批流还有问题' }, 1)!
      expect(decision.idioms).toContain('闭环')
      expect(h.bank.injection(s4.id)).toMatch(/User idioms: .*闭环/)
    })

    it('caps idioms per partition (LRU) and keeps only the window of user turns', async () => {
      await h.close()
      h = await openHarness(where, { maxIdioms: 1, extract: { userIdiomWindowTurns: 4 } })
      const texts = ['抓手 闭环 飞书插件', '抓手 闭环 Kubernetes 部署', '赋能 数据库迁移', '赋能 缓存雪崩']
      for (const [index, text] of texts.entries()) {
        h.clock.advance(1000)
        await talk(h.bank, session(), 1, text, 'OK')
        expect((await h.repository.recentUserTurns('workspace:/work/alpha', 100)).length).toBe(Math.min(index + 1, 4))
      }
      const idioms = h.bank.idioms('/work/alpha')
      expect(idioms).toHaveLength(1)
      expect(idioms[0]!.word).toBe('赋能')
    })
  })

  describe('forgetting', () => {
    it('evicts the least recently touched cues beyond maxTopics; a woken cue survives', async () => {
      await h.close()
      h = await openHarness(where, { maxTopics: 4 }, { hooks: { onWritten: (e) => written.push(e) } })
      const first = session()
      await talk(h.bank, first, 1, PG_USER, PG_REPLY)
      const wokenIds = new Set<string>()
      for (const topic of ['Kubernetes 集群部署', 'Redis 缓存雪崩', '飞书插件审批流']) {
        h.clock.advance(DAY)
        // Each new session first wakes the PostgreSQL cue (touching it), then talks about something else.
        const s = session()
        const decision = h.bank.observeUserMessage(s, { id: 'wake', text: 'PostgreSQL 主数据库迁移' }, 1)!
        for (const ranked of decision.cues) if (ranked.cue.sessionId === first.id) wokenIds.add(ranked.cue.id)
        await h.bank.settle(s.id)
        await talk(h.bank, s, 2, topic, 'OK')
      }
      expect(wokenIds.size).toBe(1)
      const remaining = h.bank.list({ limit: 100 })
      expect(remaining).toHaveLength(4)
      expect(remaining.map((c) => c.id)).toEqual(expect.arrayContaining([...wokenIds]))
      expect(written.flatMap((w) => w.evicted).length).toBe(4)
    })

    it('deletes cues whose decay fell below pruneBelow, and ranks decayed cues lower', async () => {
      await h.close()
      h = await openHarness(where, { decay: { halfLifeDays: 30, pruneBelow: 0.1 } })
      const old = session()
      await talk(h.bank, old, 1, 'Kubernetes 集群部署用 Helm', 'OK')
      h.clock.advance(40 * DAY)
      const newer = session()
      // Written without a wake (talk() would wake, and so refresh, the old cues).
      await h.bank.recordTurn(newer, { turn: 1, user: [{ id: 'n1', text: 'Kubernetes 集群部署用 Helm chart' }], assistant: [] })
      const decision = h.bank.observeUserMessage(session(), { id: 'm', text: 'Kubernetes 集群部署 Helm' }, 1)!
      expect(decision.cues[0]!.cue.sessionId).toBe(newer.id)
      expect(decision.cues.find((c) => c.cue.sessionId === old.id)!.score).toBeLessThan(decision.cues[0]!.score)
      // 30 × log2(1/0.1) ≈ 100 days untouched: the old cues are deleted at the next write,
      // except one the wake above touched (waking resets its decay).
      const oldIds = h.bank.list({ limit: 100 }).filter((c) => c.sessionId === old.id).map((c) => c.id)
      const wokenOld = decision.cues.filter((c) => c.cue.sessionId === old.id).map((c) => c.cue.id)
      expect(oldIds).toHaveLength(2)
      expect(wokenOld).toHaveLength(1)
      h.clock.advance(70 * DAY)
      const written = await talk(h.bank, session(), 1, 'Redis 缓存雪崩', 'OK')
      expect(written!.evicted).toEqual(oldIds.filter((id) => !wokenOld.includes(id)))
      expect(h.bank.list({ limit: 100 }).map((c) => c.id)).toContain(wokenOld[0])
      h.clock.advance(120 * DAY)
      await talk(h.bank, session(), 1, 'Kafka 消费者积压', 'OK')
      expect(h.bank.list({ limit: 100 }).some((c) => c.sessionId === old.id)).toBe(false)
    })
  })

  describe('traceability', () => {
    it("opens a cue's source turns from the store's L0 messages, or its own excerpt without them", async () => {
      const a = session()
      await h.store.conversations.ensure({ id: a.id, workspace: a.workspace })
      await h.store.messages.append({ conversationId: a.id, hostMessageId: `u-${a.id}-1`, role: 'user', text: PG_USER, turn: 1 })
      await h.store.messages.append({ conversationId: a.id, hostMessageId: `a-${a.id}-1`, role: 'assistant', text: PG_REPLY, turn: 1 })
      await talk(h.bank, a, 1, PG_USER, PG_REPLY)
      const cue = h.bank.list({ level: 'conversation' })[0]!
      const opened = await h.bank.open(cue.id)
      expect(opened.source).toBe('store')
      expect(opened.turns.map((t) => [t.role, t.text])).toEqual([
        ['user', PG_USER],
        ['assistant', PG_REPLY],
      ])

      const b = session()
      await talk(h.bank, b, 1, 'Kubernetes 集群部署', 'Use Helm.')
      const uncaptured = await h.bank.open(h.bank.list({ level: 'conversation' }).find((c) => c.sessionId === b.id)!.id)
      expect(uncaptured.source).toBe('cue-detail')
      expect(uncaptured.turns[0]!.text).toContain('Kubernetes 集群部署')

      await expect(h.bank.open('c-missing')).rejects.toSatisfy((error: unknown) => isCueBankError(error, 'not-found'))
    })
  })

  it('partitions per workspace, per user (channel:user session ids, as the reference) or globally', async () => {
    expect(partitionKey('workspace', { id: 'session-1', workspace: '/w' })).toBe('workspace:/w')
    expect(partitionKey('user', { id: 'feishu:ou_7d8a', workspace: '/w' })).toBe('user:ou_7d8a')
    // A DSH session id names no user: the person at this machine has one bank in every workspace.
    expect(partitionKey('user', { id: 'session-1', workspace: '/w' }, 'alice')).toBe('user:alice')
    expect(partitionKey('user', { id: 'session-2', workspace: '/other' }, 'alice')).toBe('user:alice')
    expect(partitionKey('global', { id: 'feishu:ou_7d8a', workspace: '/w' })).toBe('global')
    await h.close()
    h = await openHarness(where, { partition: 'user' })
    const alice = session('/work/alpha', 'feishu:ou_alice')
    await talk(h.bank, alice, 1, PG_USER, PG_REPLY)
    // Another user of the same workspace is not woken by Alice's cues.
    expect(h.bank.observeUserMessage(session('/work/alpha', 'feishu:ou_bob'), { id: 'm', text: 'PostgreSQL 主数据库迁移' }, 1)!.cues).toEqual([])
    // Alice's one long-lived session: her own earlier turns are in context, so they do not wake...
    await talk(h.bank, alice, 2, 'Recommend a pasta recipe for tonight', 'Carbonara.')
    expect(h.bank.observeUserMessage(alice, { id: 'm3', text: 'PostgreSQL 主数据库迁移还有问题' }, 3)!.cues).toEqual([])
    await h.bank.recordTurn(alice, { turn: 3, user: [{ id: 'm3', text: 'PostgreSQL 主数据库迁移还有问题' }], assistant: [] })
    // ...until the host compacts them away; then her own conversation cues of those turns wake
    // (the best one: one cue per session and level), never her task cue.
    h.bank.observeCompaction(alice, 3)
    await talk(h.bank, alice, 4, 'Recommend a pasta recipe for tonight', 'Carbonara.')
    const back = h.bank.observeUserMessage(alice, { id: 'm5', text: 'PostgreSQL 主数据库迁移完成了吗' }, 5)!
    expect(back.partition).toBe('user:ou_alice')
    expect(back.cues).toHaveLength(1)
    expect(back.cues[0]!.cue).toMatchObject({ sessionId: alice.id, level: 'conversation' })
    expect([1, 3]).toContain(back.cues[0]!.cue.turn)
  })

  it("partition 'user' gives one person the same bank in every workspace, with DSH session ids (userId, else the OS account)", async () => {
    await h.close()
    h = await openHarness(where, { partition: 'user' }, { env: { USER: 'alice' } })
    const inAlpha = session('/work/alpha')
    await talk(h.bank, inAlpha, 1, PG_USER, PG_REPLY)
    // Another project of the same person: the topic comes back with its cue.
    const inBeta = session('/work/beta')
    await talk(h.bank, inBeta, 1, 'Recommend a pasta recipe for tonight', 'Try carbonara.')
    const woken = h.bank.observeUserMessage(inBeta, { id: 'b2', text: 'PostgreSQL 主数据库迁移之后索引还要重建吗？' }, 2)!
    expect(woken.partition).toBe('user:alice')
    expect(woken.cues.map((c) => c.cue.sessionId)).toEqual([inAlpha.id])
    await h.bank.settle(inBeta.id)
    await h.close()
    // userId names the bank explicitly; another person's bank is not read.
    h = await openHarness(where, { partition: 'user', userId: 'bob' }, { env: { USER: 'alice' } })
    const bob = session('/work/beta')
    await talk(h.bank, bob, 1, 'Recommend a pasta recipe for tonight', 'Try carbonara.')
    const none = h.bank.observeUserMessage(bob, { id: 'c2', text: 'PostgreSQL 主数据库迁移之后索引还要重建吗？' }, 2)!
    expect(none.partition).toBe('user:bob')
    expect(none.cues).toEqual([])
  })

  it('keeps going when a listener hook throws, and reports it', async () => {
    await h.close()
    const clock = new Clock()
    const { store, ...rest } = await openHarness(where, {}, { clock })
    await rest.bank.close()
    const repository = await openCueRepository(store)
    const errors: string[] = []
    const bank = new CueBank({
      repository,
      options: resolveCueBankOptions({}, {}),
      now: clock.now,
      hooks: {
        onWritten: () => {
          throw new Error('listener bug')
        },
        onError: (_error, where) => errors.push(where),
      },
    })
    const result = await bank.recordTurn(session(), { turn: 1, user: [{ id: 'u', text: 'Redis 缓存雪崩' }], assistant: [] })
    expect(result?.cueIds).toHaveLength(2)
    expect(errors).toEqual(['onWritten listener'])
    await bank.close()
    await bank.close()
    await store.close()
    h = await openHarness(where)
  })
})
