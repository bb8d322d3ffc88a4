import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { backends, type BackendTree, openBackendTree, openTestTree, tempDir, tempDirEachTest } from './helpers.js'
import { callTool, connect, requireServerBuild } from './mcp-client.js'

const workspace = '/work/payments'
const caller = { workspace, sessionId: 'plugin-session', source: 'model' }

describe.each(backends)('two stores on one database, as two processes ($name)', (backend) => {
  let temp: ReturnType<typeof tempDir>
  let a: BackendTree
  let b: BackendTree

  beforeEach(async () => {
    temp = tempDir('tree-concurrency')
    a = await openBackendTree(backend, temp.dir)
    b = await openBackendTree(backend, temp.dir, {}, a)
  })
  afterEach(async () => {
    await a.close()
    await b.close()
    temp.remove()
  })

  it('loses no update when both handles append at once', async () => {
    await a.tree.setProject('payments', caller)
    await Promise.all([
      ...Array.from({ length: 25 }, (_, i) => a.tree.note({ kind: 'outcome', text: `A outcome ${i}` }, caller)),
      ...Array.from({ length: 25 }, (_, i) => b.tree.note({ kind: 'decision', text: `B decision ${i}` }, caller)),
    ])
    const project = (await a.tree.resolveProject(caller, { create: false }))!
    const items = await b.tree.repository.listItems(project.id)
    expect(items).toHaveLength(50)
    expect(new Set(items.map((item) => item.seq)).size).toBe(50)
    // Every append bumped the revision exactly once.
    expect(project.revision).toBe(1 + 50)
  })

  it('refuses a write based on a stale revision (optimistic versioning)', async () => {
    const { project } = await a.tree.setProject('payments', caller)
    const seen = (await a.tree.repository.getProject(project.id))!.revision
    await b.tree.note({ kind: 'constraint', text: 'PCI scope stays in the vault service' }, caller)
    await expect(a.tree.note({ kind: 'decision', text: 'Based on what I read', expectedRevision: seen }, caller)).rejects.toMatchObject({ code: 'conflict' })
    const fresh = (await a.tree.repository.getProject(project.id))!.revision
    await expect(a.tree.note({ kind: 'decision', text: 'Based on the fresh read', expectedRevision: fresh }, caller)).resolves.toMatchObject({ item: { text: 'Based on the fresh read' } })
  })

  it('a merge prepared from a stale branch log is redone with the new event', async () => {
    const { branch } = await a.tree.openBranch({ title: 'fraud rules' }, caller)
    await a.tree.logToBranch({ branchId: branch.id, kind: 'assistant', text: 'We decided to score with rules first.' }, caller)
    const repository = a.tree.repository
    const close = repository.closeBranch.bind(repository)
    let injected = false
    repository.closeBranch = async (input) => {
      if (!injected) {
        injected = true
        // The other process logs a conclusion after our read and before our write.
        await b.tree.logToBranch({ branchId: branch.id, kind: 'assistant', text: 'It turns out velocity checks catch 80% of fraud.' }, caller)
      }
      return close(input)
    }
    const merged = await a.tree.merge({ branchId: branch.id }, caller)
    expect(merged.added.map((item) => item.text)).toEqual(['We decided to score with rules first.', 'It turns out velocity checks catch 80% of fraud.'])
  })

  it('only one of two simultaneous merges of a branch wins', async () => {
    const { branch } = await a.tree.openBranch({ title: 'currency rounding' }, caller)
    const results = await Promise.allSettled([
      a.tree.merge({ branchId: branch.id, decisions: ['Round half to even'] }, caller),
      b.tree.merge({ branchId: branch.id, decisions: ['Round half up'] }, caller),
    ])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(rejected).toHaveLength(1)
    expect(rejected[0]!.reason).toMatchObject({ code: 'conflict' })
    const items = await a.tree.repository.listItems(branch.projectId)
    expect(items).toHaveLength(1)
  })
})

describe('the plugin core and two MCP server processes on one database', () => {
  const temp = tempDirEachTest('tree-processes')
  requireServerBuild()

  it('keeps every concurrent write from three writers and lets exactly one merge win', async () => {
    const local = await openTestTree(temp.dir)
    const env = { MEMORY_TREE_ROOT: temp.dir }
    const [one, two] = await Promise.all([connect({ env, args: ['--workspace', workspace] }), connect({ env, args: ['--workspace', workspace] })])
    try {
      await local.tree.setProject('payments', caller)
      const writes = await Promise.all([
        ...Array.from({ length: 15 }, (_, i) => callTool(one.client, 'mt_note', { kind: 'outcome', text: `process one outcome ${i}` })),
        ...Array.from({ length: 15 }, (_, i) => callTool(two.client, 'mt_note', { kind: 'outcome', text: `process two outcome ${i}` })),
        ...Array.from({ length: 15 }, (_, i) => local.tree.note({ kind: 'outcome', text: `plugin outcome ${i}` }, caller).then(() => ({ isError: false }))),
      ])
      expect(writes.filter((write) => write.isError)).toEqual([])
      const project = (await local.tree.resolveProject(caller, { create: false }))!
      const items = await local.tree.repository.listItems(project.id)
      expect(items).toHaveLength(45)
      expect(project.revision).toBe(1 + 45)

      const { branch } = await local.tree.openBranch({ title: 'chargeback flow' }, caller)
      const merges = await Promise.all([
        callTool(one.client, 'mt_merge', { branchId: branch.id, decisions: ['Chargebacks open a ticket'] }),
        callTool(two.client, 'mt_merge', { branchId: branch.id, decisions: ['Chargebacks page on-call'] }),
      ])
      expect(merges.filter((merge) => !merge.isError)).toHaveLength(1)
      expect(merges.find((merge) => merge.isError)?.content[0]?.text).toMatch(/conflict/)
      expect((await local.tree.repository.listItems(project.id, { kinds: ['decision'] })).length).toBe(1)

      // A checkpoint racing with writes from another process still freezes a consistent state.
      const [checkpoint] = await Promise.all([
        callTool(one.client, 'mt_checkpoint', { title: 'raced checkpoint' }),
        ...Array.from({ length: 5 }, (_, i) => callTool(two.client, 'mt_note', { kind: 'question', text: `late question ${i}` })),
      ])
      expect(checkpoint!.isError).toBe(false)
      const frozen = await local.tree.repository.getCheckpoint(checkpoint!.structuredContent!.data!.checkpointId as string)
      const activeAtRevision = frozen!.state.items.length
      // Everything written before the checkpoint's revision is in it, nothing after.
      const all = await local.tree.repository.listItems(project.id)
      expect(all.filter((item) => frozen!.state.items.some((f) => f.id === item.id))).toHaveLength(activeAtRevision)
      expect(all.length - activeAtRevision).toBe(all.filter((item) => item.stage === 2).length)
    } finally {
      await Promise.all([one.close(), two.close()])
      await local.close()
    }
  })
})
