import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { SessionSettingsRepository } from '@dsh-memory/recall'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DshHome } from '../src/host.js'
import { lastUserText, startModelServer, type ModelServer } from '../src/model-server.js'
import { freshHome, tarballs } from './helpers.js'
import { driverOverlay, readReport, startHost, writeLayersDriver } from './support/layers-driver.js'

/** The data dir recall's unit test upgrades, written by the code before recall had its own tables. */
const FIXTURE = new URL('../../../packages/recall/test/fixtures/pre-tables-memory.db.gz', import.meta.url)

describe('recall upgrades an old data dir in place, in the real DSH host', () => {
  let server: ModelServer
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>
  let driver: string

  beforeAll(async () => {
    server = await startModelServer({ responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` }) })
    ;({ home, root, cleanup } = await freshHome('recall-upgrade'))
    await home.createProfile('upgrade', tarballs(), ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/recall'])
    driver = await writeLayersDriver(join(root, 'plugins'))
    mkdirSync(join(home.dir, 'memory'), { recursive: true })
    writeFileSync(join(home.dir, 'memory', 'memory.db'), gunzipSync(readFileSync(FIXTURE)))
  }, 600_000)

  afterAll(async () => {
    await server?.close()
    await cleanup?.()
  })

  it('a session keeps its mode and its enabled layers; the meta keys are gone but the unreadable ones', async () => {
    const cwd = join(root, 'work', 'app')
    mkdirSync(cwd, { recursive: true })
    const reportFile = join(root, 'report.json')
    const steps = [{ command: '/memory status' }, { say: 'hello again' }]
    const running = await startHost(home, { profile: 'upgrade', cwd, modelUrl: server.url, name: 'upgrade', patch: driverOverlay(driver, { sessionId: 's1', resume: false, reportFile, steps }) })
    const result = await running.done
    expect(result.code).toBe(0)
    const report = await readReport(reportFile)
    expect(report.error).toBeUndefined()
    const status = report.commands[0]!.result?.text ?? ''
    expect(status).toContain('(mode work, inject follow)')
    expect(status).toMatch(/Layers: explicit — global, workspace enabled/)

    const store = openMemoryStore({ path: join(home.dir, 'memory', 'memory.db') })
    try {
      expect((await store.meta.list('recall.')).map((entry) => entry.key)).toEqual(['recall.layers.damaged', 'recall.session.future'])
      expect((await new SessionSettingsRepository(store, { mode: 'auto', inject: 'follow' }).get('会话-二')).mode).toBe('chat')
    } finally {
      await store.close()
    }
  }, 300_000)
})
