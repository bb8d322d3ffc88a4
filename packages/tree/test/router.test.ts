import { describe, expect, it } from 'vitest'
import { TreeError } from '../src/core/errors.js'
import { DEFAULT_TREE_OPTIONS, resolveTreeOptions } from '../src/core/options.js'
import { MessageRouter } from '../src/core/router.js'

const router = new MessageRouter(DEFAULT_TREE_OPTIONS)

describe('routing', () => {
  it.each([
    ['Hi! Thanks a lot, how is the weather over there?', 'en'],
    ['你好!今天天气真不错,周末去看电影吗?', 'zh'],
    ['こんにちは!いい天気ですね、週末は映画を見ますか?', 'ja'],
    ['谢谢~ 哈哈', 'zh short'],
    ['👍🎉', 'reaction'],
  ])('classifies chit-chat as chat: %s (%s)', (message) => {
    const decision = router.route(message)
    expect(decision.route).toBe('chat')
    expect(decision.score).toBeLessThanOrEqual(-1)
  })

  it.each([
    ['The deploy failed with a TypeError in src/server.ts, can you fix the bug?', ['deploy', 'bug', 'fix']],
    ['帮我重构一下数据库迁移的代码', ['代码', '数据库', '重构', '迁移']],
    ['本番環境のデプロイでエラーが出ました。設定を確認してください', ['デプロイ', 'エラー', '本番', '環境', '設定']],
    ['我们决定用 PostgreSQL,接口必须兼容 v1', ['接口', '决定']],
  ])('classifies project work as project: %s', (message, expected) => {
    const decision = router.route(message)
    expect(decision.route).toBe('project')
    for (const keyword of expected) expect(decision.matched.project).toContain(keyword)
  })

  it('matches English inflections and CJK keywords inside unsegmented text', () => {
    expect(router.route('we are deploying the services tonight').matched.project).toEqual(expect.arrayContaining(['deploy', 'service']))
    // 数据库 inside a longer run segmented differently still matches through its bigrams.
    expect(router.route('订单数据库表结构').matched.project).toContain('数据库')
  })

  it('counts code signals as project evidence', () => {
    const decision = router.route('look at `parseConfig()` in lib/config/loader.ts')
    expect(decision.matched.signals).toEqual(expect.arrayContaining(['code', 'file', 'path']))
    expect(decision.route).toBe('project')
  })

  it('leaves a tie or a message without evidence as unknown', () => {
    expect(router.route('okay, sounds reasonable to me').route).toBe('unknown')
    // one greeting + one project keyword: neither side leads by the margin
    const mixed = router.route('hello, about the bug')
    expect(mixed.route).toBe('unknown')
    expect(mixed.matched.chat).toContain('hello')
    expect(mixed.matched.project).toContain('bug')
  })

  it('does not match keywords inside other words', () => {
    expect(router.route('this is the history of it').matched.chat).not.toContain('hi')
    expect(router.route('how are you doing').matched.chat).toContain('how are you')
  })

  it('uses configured keyword lists and margin', () => {
    const custom = new MessageRouter(resolveTreeOptions({ chatKeywords: ['小说'], projectKeywords: ['论文', '实验'], routeMargin: 2 }))
    expect(custom.route('论文的实验部分').route).toBe('project')
    expect(custom.route('论文').route).toBe('unknown')
    expect(custom.route('最近在看什么小说').matched.chat).toEqual(['小说'])
  })
})

describe('tree options', () => {
  it('rejects a keyword on both lists, naming both fields', () => {
    expect(() => resolveTreeOptions({ chatKeywords: ['bug'], projectKeywords: ['Bug'] })).toThrow(/chatKeywords and projectKeywords both contain "bug"/)
  })

  it('rejects bad values with invalid-config naming the field', () => {
    const attempt = (input: object) => {
      try {
        resolveTreeOptions(input)
      } catch (error) {
        return error as TreeError
      }
      throw new Error('no error')
    }
    expect(attempt({ recentTurns: -1 })).toMatchObject({ code: 'invalid-config', message: expect.stringMatching(/^recentTurns/) })
    expect(attempt({ chatKeywords: ['ok', ''] })).toMatchObject({ code: 'invalid-config', message: expect.stringMatching(/chatKeywords\[1\]/) })
    expect(attempt({ unknownRoute: 'elsewhere' })).toMatchObject({ code: 'invalid-config', message: expect.stringMatching(/unknownRoute/) })
    expect(attempt({ routeMargin: 0 })).toMatchObject({ code: 'invalid-config', message: expect.stringMatching(/routeMargin/) })
  })

  it('returns a frozen object with defaults', () => {
    const options = resolveTreeOptions({ recentTurns: 3 })
    expect(Object.isFrozen(options)).toBe(true)
    expect(options.recentTurns).toBe(3)
    expect(options.maxContextTokens).toBe(DEFAULT_TREE_OPTIONS.maxContextTokens)
  })
})
