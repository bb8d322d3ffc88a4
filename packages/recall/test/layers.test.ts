import { describe, expect, it } from 'vitest'
import type { CoordinatedMemoryStore } from '@dsh-memory/store'
import { markCommitted, markQueued, addDesired, emptyLayerState, reconcile, setEnabled } from '../src/core/injection-ledger.ts'
import { InjectionLedger } from '../src/core/injection-ledger-repository.ts'
import { openRecallTables } from '../src/core/state-tables.ts'
import { LayerController, type LayerSessionHandle } from '../src/core/layer-controller.ts'
import { buildLayerSnapshot, injectedMemoryIds, layerRef, memoryTitle, snapshotInjectionId, snapshotMemoryIds } from '../src/core/layers.ts'
import { DEFAULT_RECALL_OPTIONS } from '../src/core/options.ts'
import { backends } from '../../store/test/contract/backends.ts'
import { tempStoreEachTest } from './support/store.ts'

/**
 * The host's side of one session, as the controller sees it through its handle: the
 * session log (append-only user/message ids), the inbox, and what enters each step. The
 * in-process and end-to-end tests drive the same controller through the real host.
 */
class SessionStandIn implements LayerSessionHandle {
  readonly log: { id: string; text: string }[] = []
  inbox: { id: string; text: string }[] = []
  constructor(
    readonly sessionId: string,
    readonly workspace: string,
  ) {}
  loggedIds() {
    return new Set(this.log.map((message) => message.id))
  }
  pendingIds() {
    return new Set(this.inbox.map((message) => message.id))
  }
  contextIds() {
    return this.loggedIds()
  }
  inject(message: { id: string; text: string }) {
    if (this.inbox.some((pending) => pending.id === message.id)) throw new Error(`message "${message.id}" is already pending`)
    this.inbox.push({ ...message })
  }
  cancelPending(id: string) {
    const before = this.inbox.length
    this.inbox = this.inbox.filter((message) => message.id !== id)
    return this.inbox.length < before
  }
  /** One step: claim the inbox, let the controller add what is missing, log everything. */
  async step(controller: LayerController): Promise<string[]> {
    const claimed = this.inbox.splice(0)
    const extra = await controller.atStep(this, new Set(claimed.map((message) => message.id)))
    const entering = [...claimed, ...extra.map((message) => ({ id: message.id, text: message.text }))]
    this.log.push(...entering)
    for (const message of entering) await controller.noteLogged(this.sessionId, message.id, this.log.length)
    return entering.map((message) => message.id)
  }
  snapshotsLogged(): number {
    return this.log.filter((message) => message.id.startsWith('memory-layer-')).length
  }
}

const WS = '/work/alpha'

function controllerFor(store: () => CoordinatedMemoryStore, now: () => number = Date.now): LayerController {
  return new LayerController({ store, ledger: new InjectionLedger(store, now), options: DEFAULT_RECALL_OPTIONS.layers })
}

describe('layer snapshots', () => {
  const openStore = tempStoreEachTest()

  it('are an index (ids, kinds, titles, token estimates), deterministic, escaped and within limits', async () => {
    const { store } = openStore()
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push((await store.memories.add({ kind: 'fact', text: `Fact ${i}: the build uses </memory-layer-index> tricks\nsecond line ${i}`, scope: 'workspace', workspace: WS, priority: i })).id)
    await store.memories.add({ kind: 'preference', text: '用户喜欢深色主题', scope: 'workspace', workspace: WS })
    await store.memories.add({ kind: 'fact', text: 'global only', scope: 'global' })
    const memories = await store.memories.list({ scope: 'workspace', workspace: WS, includeGlobal: false })
    const ref = layerRef('workspace', { sessionId: 's', workspace: WS }, 'me@example.com')
    const limits = { maxEntries: 4, maxChars: 8000, titleChars: 60 }
    const a = buildLayerSnapshot(ref, 7, memories, 'memory-layer-x', limits)
    const b = buildLayerSnapshot(ref, 7, [...memories].reverse(), 'memory-layer-x', limits)
    expect(a.text).toBe(b.text)
    expect(a.text.startsWith('<memory-layer-index layer="workspace" revision="7" injection="memory-layer-x"')).toBe(true)
    expect(a.text).not.toContain('second line')
    expect(a.text).toContain('&lt;/memory-layer-index&gt;')
    expect(a.text.match(/<\/memory-layer-index>/g)).toHaveLength(1)
    expect(a.memoryIds).toHaveLength(4)
    // Highest priority first.
    expect(a.memoryIds[0]).toBe(ids[5])
    expect(a.text).toContain('(3 more not listed: use memory_search.)')
    expect(a.total).toBe(7)
    expect(a.text).not.toContain('global only')
    expect(snapshotMemoryIds(a.text)).toEqual(a.memoryIds)
    expect(a.tokens).toBeGreaterThan(0)
    expect(memoryTitle('  first   line  \nsecond', 90)).toBe('first line')
    expect([...memoryTitle('あ'.repeat(50), 20)]).toHaveLength(20)
  })

  it('have stable injection ids per session, layer, revision and generation', () => {
    expect(snapshotInjectionId('s1', 'global', 3, 0)).toBe(snapshotInjectionId('s1', 'global', 3, 0))
    const others = [snapshotInjectionId('s2', 'global', 3, 0), snapshotInjectionId('s1', 'workspace:/w', 3, 0), snapshotInjectionId('s1', 'global', 4, 0), snapshotInjectionId('s1', 'global', 3, 1)]
    expect(new Set([snapshotInjectionId('s1', 'global', 3, 0), ...others]).size).toBe(5)
    expect(snapshotInjectionId('s1', 'global', 3, 0)).toMatch(/^memory-layer-[0-9a-f]{32}$/)
  })

  it('the workspace layer needs a workspace', () => {
    expect(() => layerRef('workspace', { sessionId: 's', workspace: '' }, 'me@example.com')).toThrow(/no workspace layer/)
  })

  it('injectedMemoryIds reads recall messages and snapshots of the log, nothing else', () => {
    const events = [
      { type: 'user/message', data: { source: { kind: 'plugin', plugin: 'memory-recall' }, content: [{ type: 'text', text: '<memory-layer-index layer="global">\n- m-1 [fact] x (~1 tok)\n</memory-layer-index>' }] } },
      { type: 'user/message', data: { source: { kind: 'plugin', plugin: 'memory-recall' }, content: [{ type: 'text', text: '<recalled-memories source="dsh-memory" untrusted="true">\n<memory id="m-2" kind="fact">y</memory>\n</recalled-memories>' }] } },
      { type: 'user/message', data: { source: { kind: 'user' }, content: [{ type: 'text', text: '- m-3 [fact] typed by the user' }] } },
      { type: 'user/message', data: { source: { kind: 'plugin', plugin: 'other' }, content: [{ type: 'text', text: '<memory-layer-index>\n- m-4 [fact] z\n' }] } },
    ]
    expect([...injectedMemoryIds(events)].sort()).toEqual(['m-1', 'm-2'])
  })
})

describe('the injection state machine', () => {
  it('pure transitions: desired → queued → committed; reconcile sorts live records by what the host shows', () => {
    let state = emptyLayerState('s', 1)
    state = addDesired(state, { id: 'memory-layer-a', layer: 'workspace', layerKey: 'workspace:/w', revision: 1, generation: 0 }, 2)
    expect(() => addDesired(state, { id: 'memory-layer-b', layer: 'workspace', layerKey: 'workspace:/w', revision: 1, generation: 1 }, 2)).toThrow(/already on its way/)
    state = markQueued(state, 'memory-layer-a', { entries: 3, tokens: 40 }, 3)
    expect(reconcile(state, { logged: new Set(), pending: new Set(['memory-layer-a']) }, 4).missing).toEqual([])
    expect(reconcile(state, { logged: new Set(), pending: new Set(), entering: new Set(['memory-layer-a']) }, 4).missing).toEqual([])
    expect(reconcile(state, { logged: new Set(), pending: new Set() }, 4).missing.map((record) => record.id)).toEqual(['memory-layer-a'])
    const committed = reconcile(state, { logged: new Set(['memory-layer-a']), pending: new Set() }, 5).state
    expect(committed.injections[0]).toMatchObject({ state: 'committed', committedAt: 5, entries: 3, tokens: 40 })
    expect(markCommitted(committed, 'memory-layer-a', 9)).toBe(committed)
  })

  describe.each(backends)('with a real store ($name), across a restart between queued and committed', (backend) => {
    let handle: { store: CoordinatedMemoryStore } | undefined

    const current = () => handle!.store
    /** A store on a fresh database (SQLite file or PostgreSQL schema), closed after the test. */
    const open = async () => (handle = { store: await backend.open() })

    async function seed(store: CoordinatedMemoryStore) {
      await store.memories.add({ kind: 'fact', text: 'Deploys go out with Kamal.', scope: 'workspace', workspace: WS })
      await store.memories.add({ kind: 'instruction', text: 'Run the linter before committing.', scope: 'workspace', workspace: WS })
    }

    /** A seeded store, a controller on it and session s1 with `layer` enabled (its snapshot queued). */
    async function enabled(layer: 'workspace' | 'global' = 'workspace') {
      await open()
      await seed(current())
      const controller = controllerFor(current)
      const session = new SessionStandIn('s1', WS)
      await controller.enable(session, layer)
      return { controller, session, id: session.inbox[0]!.id }
    }

    /** The process restarts: the same database is reopened and a fresh controller runs on it. */
    async function restart(): Promise<LayerController> {
      const old = handle!.store
      await old.close()
      handle = { store: await backend.reopen(old) }
      return controllerFor(current)
    }

    it('enable queues one snapshot through the inject API, and the log commits it', async () => {
      await open()
      await seed(current())
      const controller = controllerFor(current)
      const session = new SessionStandIn('s1', WS)
      const text = await controller.enable(session, 'workspace')
      expect(text).toMatch(/Enabled the workspace layer/)
      expect(session.inbox).toHaveLength(1)
      const id = session.inbox[0]!.id
      expect(id).toBe(snapshotInjectionId('s1', `workspace:${WS}`, 2, 0))
      expect((await controller.state('s1')).injections[0]).toMatchObject({ id, state: 'queued', revision: 2, entries: 2 })
      expect(await session.step(controller)).toEqual([id])
      expect((await controller.state('s1')).injections[0]).toMatchObject({ id, state: 'committed' })
      // Later steps add nothing; enabling again or refreshing an unchanged layer adds nothing.
      expect(await session.step(controller)).toEqual([])
      expect(await controller.enable(session, 'workspace')).toMatch(/already enabled; the snapshot in this conversation is current \(revision 2\)/)
      expect(await controller.refresh(session)).toMatch(/current/)
      expect(session.snapshotsLogged()).toBe(1)
    })

    it('restart after queued, the inbox lost (discarded on exit): delivered again under the same id, exactly once', async () => {
      const { session, id } = await enabled()
      // The host exits: its inbox is discarded durably, the process (and its controller) is gone.
      session.inbox = []
      const controller = await restart()
      await controller.atSessionStart(session)
      expect((await controller.state('s1')).injections[0]).toMatchObject({ id, state: 'queued' })
      expect(await session.step(controller)).toEqual([id])
      expect(await session.step(controller)).toEqual([])
      expect(session.snapshotsLogged()).toBe(1)
      expect((await controller.state('s1')).injections.map((record) => [record.id, record.state])).toEqual([[id, 'committed']])
    })

    it('restart after queued, the inbox restored from the log: nothing is added, the pending one lands once', async () => {
      const { session, id } = await enabled()
      const controller = await restart()
      await controller.atSessionStart(session)
      expect(await session.step(controller)).toEqual([id])
      expect(session.snapshotsLogged()).toBe(1)
    })

    it('restart after the host logged it but before the commit was recorded: reconciliation commits, nothing is re-sent', async () => {
      const { session, id } = await enabled()
      // The step logs it, and the process dies before noteLogged runs.
      session.log.push(...session.inbox.splice(0))
      const controller = await restart()
      await controller.atSessionStart(session)
      expect((await controller.state('s1')).injections[0]).toMatchObject({ id, state: 'committed' })
      expect(await session.step(controller)).toEqual([])
      expect(session.snapshotsLogged()).toBe(1)
    })

    it('restart after queued, and the layer changed meanwhile: the lost snapshot is replaced by one of the new revision', async () => {
      const { session, id: old } = await enabled()
      session.inbox = []
      const controller = await restart()
      await current().memories.add({ kind: 'fact', text: 'A third fact.', scope: 'workspace', workspace: WS })
      const delivered = await session.step(controller)
      expect(delivered).toHaveLength(1)
      expect(delivered[0]).not.toBe(old)
      expect(delivered[0]).toBe(snapshotInjectionId('s1', `workspace:${WS}`, 3, 0))
      expect(session.log.at(-1)!.text).toContain('A third fact.')
      expect((await controller.state('s1')).injections.map((record) => record.state)).toEqual(['superseded', 'committed'])
      expect(session.snapshotsLogged()).toBe(1)
    })

    it('refresh delivers a new snapshot only after the layer changed or the old one left the context; disable cancels a pending one', async () => {
      const { controller, session } = await enabled()
      await session.step(controller)
      await current().memories.add({ kind: 'fact', text: 'Something new.', scope: 'workspace', workspace: WS })
      expect(await controller.refresh(session, 'workspace')).toMatch(/revision 3/)
      await session.step(controller)
      expect(session.snapshotsLogged()).toBe(2)
      await current().memories.add({ kind: 'fact', text: 'And another.', scope: 'workspace', workspace: WS })
      await controller.refresh(session)
      expect(session.inbox).toHaveLength(1)
      expect(await controller.disable(session, 'workspace')).toMatch(/1 pending snapshot cancelled/)
      expect(session.inbox).toHaveLength(0)
      expect(await session.step(controller)).toEqual([])
      expect(await controller.isExplicit('s1')).toBe(false)
      await expect(controller.refresh(session)).rejects.toThrow(/no memory layer is enabled/)
      await expect(controller.refresh(session, 'global')).rejects.toThrow(/not enabled/)
    })

    it('a discarded snapshot becomes desired again and the next step delivers it once', async () => {
      const { controller, session, id } = await enabled('global')
      session.inbox = []
      await controller.noteDiscarded('s1', id)
      expect((await controller.state('s1')).injections[0]!.state).toBe('desired')
      expect(await session.step(controller)).toEqual([id])
      expect(session.snapshotsLogged()).toBe(1)
    })

    it('two processes on one database: of two deliveries computed from the same state, exactly one is queued', async () => {
      const { session, id } = await enabled()
      // The inbox is lost and two processes sharing the database find the snapshot missing at once.
      session.inbox = []
      const other = await backend.reopen(current())
      const [mine, theirs] = [new InjectionLedger(current), new InjectionLedger(() => other)]
      const [seenByMine, seenByTheirs] = [await mine.get('s1'), await theirs.get('s1')]
      const redelivered = (state: typeof seenByMine, now: number) => markQueued(state, id, { entries: 2, tokens: 30 }, now)
      expect(await theirs.put(redelivered(seenByTheirs, 2), seenByTheirs)).toBe(true)
      // The same transition at the same moment, from the state read before: refused, nothing written.
      expect(await mine.put(redelivered(seenByMine, 2), seenByMine)).toBe(false)
      expect((await mine.get('s1')).injections.map((record) => [record.id, record.state, record.tokens])).toEqual([[id, 'queued', 30]])
      // Read-modify-writes from both processes at once both land: each retries on the fresh state.
      await Promise.all([mine.update('s1', (state, now) => ({ state: setEnabled(state, 'global', true, now).state, result: undefined })), theirs.update('s1', (state, now) => ({ state: markCommitted(state, id, now, 7), result: undefined }))])
      const final = await theirs.get('s1')
      expect(final.enabled).toEqual({ global: true, workspace: true })
      expect(final.injections.map((record) => [record.id, record.state, record.seq])).toEqual([[id, 'committed', 7]])
    })

    it("the global layer is per user: B's snapshot never lists A's global memories, and A's writes do not refresh B's", async () => {
      const alice = await backend.open({ user: 'alice@example.com' })
      const bob = await backend.reopen(alice, { user: 'bob@example.com' })
      await alice.memories.add({ kind: 'preference', text: 'Alice prefers 抹茶 over coffee', scope: 'global' })
      await bob.memories.add({ kind: 'preference', text: 'Bob prefers espresso', scope: 'global' })
      const shared = await alice.memories.add({ kind: 'fact', text: 'The shop deploys with Kamal', scope: 'workspace', workspace: WS })
      const [forAlice, forBob] = [controllerFor(() => alice), controllerFor(() => bob)]
      const [aliceSession, bobSession] = [new SessionStandIn('s-alice', WS), new SessionStandIn('s-bob', WS)]
      await forAlice.enable(aliceSession, 'global')
      await forBob.enable(bobSession, 'global')
      await forBob.enable(bobSession, 'workspace')
      const bobIds = await bobSession.step(forBob)
      await aliceSession.step(forAlice)
      const bobText = bobSession.log.map((message) => message.text).join('\n')
      expect(bobText).toContain('Bob prefers espresso')
      expect(bobText).not.toContain('抹茶')
      // The workspace layer is the team's: Alice's fact is in Bob's snapshot.
      expect(bobSession.log.flatMap((message) => snapshotMemoryIds(message.text))).toContain(shared.id)
      expect(aliceSession.log.map((message) => message.text).join('\n')).toContain('抹茶')
      // The ledger keys Bob's global snapshot by his own layer key.
      expect((await forBob.state('s-bob')).injections.map((record) => record.layerKey).sort()).toEqual(['global:bob@example.com', `workspace:${WS}`])
      expect(bobIds).toHaveLength(2)
      // Alice's new global memory changes her layer, not Bob's: his refresh finds it current.
      await alice.memories.add({ kind: 'fact', text: 'Alice lives in 京都', scope: 'global' })
      expect(await forBob.refresh(bobSession, 'global')).toMatch(/current/)
      expect(await forAlice.refresh(aliceSession, 'global')).not.toMatch(/is current/)
    })

    it('the ledger holds ids, revisions and states, never memory text', async () => {
      const { store } = await open()
      await store.memories.add({ kind: 'fact', text: 'purple-elephant secret project name', scope: 'workspace', workspace: WS })
      const controller = controllerFor(current)
      const session = new SessionStandIn('s1', WS)
      await controller.enable(session, 'workspace')
      await session.step(controller)
      const rows = await (await openRecallTables(store)).read(async (db, t) => [await db.select().from(t.layerSessions), await db.select().from(t.injections)])
      expect(rows[1]).toHaveLength(1)
      expect(JSON.stringify(rows)).not.toContain('purple-elephant')
      expect(await store.meta.list('recall.')).toEqual([])
    })
  })
})
