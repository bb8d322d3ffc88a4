import { join } from 'node:path'
import { InjectionLedger } from '@dsh-memory/recall'
import { coordinatedStore, openMemoryStore, type CoordinatedMemoryStore } from '@dsh-memory/store'
import { beforeAll, describe, expect, it } from 'vitest'
import { contentText, lastUserText, type LoggedRequest } from '../src/model-server.js'
import { useHostProfile } from './helpers.js'
import { driverOverlay, readReport, startHost, waitForFile, writeLayersDriver, type DriverStep } from './support/layers-driver.js'
import { loggedUserMessages } from './support/recall-requests.js'

const INDEX = '<memory-layer-index'

/** The layer snapshots a chat request carries. */
function snapshotsIn(request: LoggedRequest): string[] {
  return request.body.messages
    .filter((message) => message.role === 'user')
    .map((message) => contentText(message.content))
    .filter((text) => text.startsWith(INDEX))
}

describe('explicit memory layers in the real DSH host, across a restart', () => {
  let driver: string
  const workspace = () => join(hosted.root, 'work', 'alpha')

  const withStore = async <T>(fn: (store: CoordinatedMemoryStore) => Promise<T>): Promise<T> => {
    const store = coordinatedStore(openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') }))
    try {
      return await fn(store)
    } finally {
      await store.close()
    }
  }

  /** Run the driver for one host process; `kill` waits for `mark` and SIGKILLs it there. */
  const drive = async (name: string, config: { sessionId: string; resume: boolean; steps: DriverStep[] }, kill?: string) => {
    const reportFile = join(hosted.root, `report-${name}.json`)
    const running = await startHost(hosted.home, { profile: 'layers', cwd: workspace(), modelUrl: hosted.server.url, name, patch: driverOverlay(driver, { ...config, reportFile }) })
    if (kill) {
      await waitForFile(kill, running)
      running.child.kill('SIGKILL')
    }
    const result = await running.done
    return { ...result, report: await readReport(reportFile) }
  }

  const chats = (from: number) => hosted.server.requests.slice(from).filter((request) => request.purpose === 'chat')
  // The ledger as the plugin keeps it: recall's own tables in the data dir's database.
  const ledger = (sessionId: string) => withStore((store) => new InjectionLedger(() => store).get(sessionId))

  const hosted = useHostProfile('layers', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/recall'],
    responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` }),
  })

  beforeAll(async () => {
    driver = await writeLayersDriver(join(hosted.root, 'plugins'))
    await withStore(async (store) => {
      await store.memories.add({ kind: 'fact', text: 'Staging deploys of this project go out with Kamal.', scope: 'workspace', workspace: workspace() })
      await store.memories.add({ kind: 'instruction', text: 'Run the linter before every commit.', scope: 'workspace', workspace: workspace() })
      await store.memories.add({ kind: 'preference', text: 'The user drinks green tea while coding.', scope: 'global' })
    })
    }, 600_000)

  it('the host is killed between queued and committed; the resumed session logs the snapshot exactly once', async () => {
    const sessionId = 'session-layers-e2e-killed'
    const mark = join(hosted.root, 'queued.mark')
    const first = await drive(
      'killed-1',
      { sessionId, resume: false, steps: [{ say: 'hello' }, { command: '/memory enable workspace' }, { flush: true }, { mark }, { hang: true }] },
      mark,
    )
    expect(first.signal).toBe('SIGKILL')
    expect(first.report.error).toBeUndefined()
    expect(first.report.commands[0]!.result).toMatchObject({ kind: 'success', text: expect.stringMatching(/^Enabled the workspace layer for this session; its index \(revision \d+: 2 of 2 memories listed/) })
    const queued = await ledger(sessionId)
    expect(queued.injections.map((record: { state: string }) => record.state)).toEqual(['queued'])
    const id = queued.injections[0]!.id
    const logged = async () => (await loggedUserMessages(join(hosted.home.dir, 'sessions'))).filter((message) => message.text.includes(`injection="${id}"`))
    expect(await logged()).toEqual([])

    // A new host process resumes the session by id and the user goes on.
    const before = hosted.server.requests.length
    const second = await drive('killed-2', { sessionId, resume: true, steps: [{ say: 'What do you know about deploys here?' }] })
    expect(second.code).toBe(0)
    expect(second.report.error).toBeUndefined()
    const [request] = chats(before)
    const snapshots = snapshotsIn(request!)
    expect(snapshots).toHaveLength(1)
    expect(snapshots[0]).toContain(`injection="${id}"`)
    expect(snapshots[0]).toContain('Staging deploys of this project go out with Kamal.')
    expect(snapshots[0]).not.toContain('green tea')
    // Explicit mode: no automatic recall block.
    expect(request!.body.messages.some((message) => contentText(message.content).startsWith('<recalled-memories'))).toBe(false)
    const entries = await logged()
    expect(entries).toHaveLength(1)
    expect(entries[0]!.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'catalog' })
    expect((await ledger(sessionId)).injections.map((record: { id: string; state: string }) => [record.id, record.state])).toEqual([[id, 'committed']])

    // And once more: a third process adds nothing.
    const again = hosted.server.requests.length
    const third = await drive('killed-3', { sessionId, resume: true, steps: [{ say: 'Anything else?' }, { command: '/memory status' }] })
    expect(third.code).toBe(0)
    expect(snapshotsIn(chats(again)[0]!)).toEqual(snapshots)
    expect(await logged()).toHaveLength(1)
    expect(third.report.commands[0]!.result?.text).toMatch(/workspace: enabled, snapshot memory-layer-\w+ committed at revision \d+ \(2 listed/)
  })

  it('an orderly exit discards the pending snapshot from the inbox; the resumed session still gets it, once', async () => {
    const sessionId = 'session-layers-e2e-exited'
    const first = await drive('exited-1', { sessionId, resume: false, steps: [{ say: 'hello' }, { command: '/memory enable global' }] })
    expect(first.code).toBe(0)
    const record = (await ledger(sessionId)).injections[0]!
    const logged = async () => (await loggedUserMessages(join(hosted.home.dir, 'sessions'))).filter((message) => message.text.includes(`injection="${record.id}"`))
    expect(await logged()).toEqual([])
    const before = hosted.server.requests.length
    const second = await drive('exited-2', { sessionId, resume: true, steps: [{ say: 'Which tea do I like?' }, { say: 'thanks' }] })
    expect(second.code).toBe(0)
    const requests = chats(before)
    expect(requests).toHaveLength(2)
    for (const request of requests) {
      const snapshots = snapshotsIn(request)
      expect(snapshots).toHaveLength(1)
      expect(snapshots[0]).toContain('green tea')
    }
    expect(await logged()).toHaveLength(1)
    expect((await ledger(sessionId)).injections.map((entry: { state: string }) => entry.state)).toEqual(['committed'])
  })

  it('interactive writes (/memory remember) from two processes at once are all kept, and each bumps the layer revision once', async () => {
    const before = await withStore(async (store) => (await store.layers.revision({ scope: 'workspace', workspace: workspace() })).revision)
    const steps = (host: string) => Array.from({ length: 6 }, (_, i) => ({ command: `/memory remember Host ${host} note ${i}: the queue worker ${i} runs on port ${4000 + i}.` }))
    const [a, b] = await Promise.all([
      drive('writer-a', { sessionId: 'session-layers-writer-a', resume: false, steps: steps('A') }),
      drive('writer-b', { sessionId: 'session-layers-writer-b', resume: false, steps: steps('B') }),
    ])
    for (const run of [a, b]) {
      expect(run.code).toBe(0)
      expect(run.report.commands.map((entry) => entry.result?.kind)).toEqual(Array(6).fill('success'))
    }
    await withStore(async (store) => {
      const notes = (await store.memories.list({ workspace: workspace(), includeGlobal: false, limit: 1_000 })).map((memory) => memory.text).filter((text) => text.startsWith('Host '))
      expect(notes.sort()).toEqual([...steps('A'), ...steps('B')].map((step) => step.command.slice('/memory remember '.length)).sort())
      expect((await store.layers.revision({ scope: 'workspace', workspace: workspace() })).revision).toBe(before + 12)
    })
  })
})
