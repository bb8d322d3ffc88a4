import { describe, expect, it } from 'vitest'
import { detectBranchCue } from '../src/core/branch-cue.js'
import { FakeClock, openTestTree, tempDir } from './helpers.js'

const ws = '/work/orders-service'
const caller = { workspace: ws, sessionId: 'session-1', source: 'user' }

describe('branch cues (a side question or a trial opens a branch, as the reference does)', () => {
  it('finds side questions and trials in English, Chinese and Japanese', () => {
    expect(detectBranchCue('By the way, how does the ORM handle migrations?')).toMatchObject({ kind: 'side-question', cue: 'By the way' })
    expect(detectBranchCue('顺便问一下,Redis 的持久化怎么配置?')).toMatchObject({ kind: 'side-question', cue: '顺便问一下' })
    expect(detectBranchCue('ちなみに、このエラーの原因は何ですか?')).toMatchObject({ kind: 'side-question', cue: 'ちなみに' })
    expect(detectBranchCue("Let's try a connection pool of 50 for the orders API.")).toMatchObject({ kind: 'trial', cue: "Let's try" })
    expect(detectBranchCue('我们试试把缓存换成 Redis。')).toMatchObject({ kind: 'trial', cue: '试试' })
    expect(detectBranchCue('試しにキャッシュを無効にしてテストしてください。')).toMatchObject({ kind: 'trial', cue: '試しに' })
    // The title is the message on one line, clipped.
    expect(detectBranchCue(`btw ${'x'.repeat(100)}`)!.title).toHaveLength(60)
  })

  it('leaves ordinary work on the mainline', () => {
    for (const text of [
      "Let's explore which database to use for the orders service.",
      'Fix the deploy bug in src/deploy.ts.',
      '继续实现下单接口。',
      'テストを書いてください。',
      'The retry policy we tried last week failed.',
    ]) {
      expect(detectBranchCue(text), text).toBeUndefined()
    }
  })
})

describe('automatic branches and checkpoint branch handling on a real database', () => {
  it('opens a branch for a side question, logs the exchange there and keeps it current until merged', async () => {
    const temp = tempDir('tree-autobranch')
    const clock = new FakeClock()
    const opened = await openTestTree(temp.dir, { now: clock.now })
    try {
      const { tree } = opened
      await tree.recordMessage({ role: 'user', text: 'Fix the checkout bug in src/cart.ts.', caller })
      const side = await tree.recordMessage({ role: 'user', text: '顺便问一下,Redis 的持久化怎么配置?', caller })
      expect(side.destination).toBe('branch')
      expect(side.openedBranch?.title).toBe('顺便问一下,Redis 的持久化怎么配置?')
      await tree.recordMessage({ role: 'assistant', text: 'Use AOF with everysec.', caller, follow: side.destination })
      // The next message follows the current branch; no second branch is opened.
      const next = await tree.recordMessage({ role: 'user', text: "Let's try RDB snapshots too.", caller })
      expect(next).toMatchObject({ destination: 'branch', branchId: side.branchId })
      expect(next.openedBranch).toBeUndefined()
      const log = await tree.branchLog(side.branchId!, caller)
      expect(log.events.map((event) => event.kind)).toEqual(['opened', 'user', 'assistant', 'user'])
      expect(log.events[0]!.text).toBe('Opened automatically (side-question: "顺便问一下").')
      // The mainline context names it as current, never its log.
      const context = await tree.getContext({ workspace: ws, sessionId: 'other' })
      expect(context.text).toContain(`(${side.branchId}, current)`)
      expect(context.text).not.toContain('AOF')
      // Merged, the mainline is current again.
      await tree.merge({ summary: 'Decision: Redis uses AOF everysec' }, caller)
      expect((await tree.recordMessage({ role: 'user', text: 'Deploy the cart fix.', caller })).destination).toBe('mainline')
    } finally {
      await opened.close()
      temp.remove()
    }
  })

  it('autoBranch: false keeps every project message on the mainline', async () => {
    const temp = tempDir('tree-autobranch-off')
    const opened = await openTestTree(temp.dir, { options: { autoBranch: false } })
    try {
      const side = await opened.tree.recordMessage({ role: 'user', text: 'By the way, how does the deploy pipeline cache builds?', caller })
      expect(side).toMatchObject({ destination: 'mainline', branchId: null })
      expect(side.openedBranch).toBeUndefined()
    } finally {
      await opened.close()
      temp.remove()
    }
  })

  it("checkpointBranches: 'carry' keeps open branches open into the next stage", async () => {
    const temp = tempDir('tree-carry')
    const opened = await openTestTree(temp.dir, { options: { checkpointBranches: 'carry' } })
    try {
      const { tree } = opened
      const open = await tree.openBranch({ title: 'still exploring' }, caller)
      const result = await tree.checkpoint({ title: 'Stage 1' }, caller)
      expect(result.clearedBranches).toBe(0)
      expect(result.checkpoint.document).toContain(`\`${open.branch.id}\` "still exploring" — still open, carried over`)
      expect((await tree.listBranches(caller)).branches.map((branch) => [branch.id, branch.status])).toEqual([[open.branch.id, 'active']])
      expect(result.project.currentBranchId).toBe(open.branch.id)
    } finally {
      await opened.close()
      temp.remove()
    }
  })
})
