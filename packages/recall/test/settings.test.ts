/**
 * Live settings of recall: the namespace `memory-recall` on the host's real settings service
 * (the file provider over a real settings.yaml), in the in-process host. A change applies from
 * the next turn without a restart; an invalid value is refused naming the field and the last
 * good value stays; the embeddings API key never leaves the host in a described section.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { recalledIds } from '../src/core/recall-text.ts'
import { RECALL_SETTINGS_NAMESPACE } from '../src/settings.ts'
import { chatRequests, recallMessages, startHost, type TestHost } from './support/host.ts'

const store = (host: TestHost) => (host.ctx as any).memoryStore
const settings = (host: TestHost) => (host.ctx as any).settings

/**
 * How many memories recall put in front of the model for one turn of a fresh session (a
 * session never gets a memory twice, so each check starts its own).
 */
async function recalledCount(host: TestHost, text: string): Promise<number> {
  const agent = await host.createAgent('/work/alpha')
  const [request] = chatRequests(await host.say(agent, text))
  return recallMessages(request!).flatMap(recalledIds).length
}

describe('recall live settings (namespace memory-recall)', () => {
  let host: TestHost | undefined
  let dir: string | undefined
  afterEach(async () => {
    await host?.cleanup()
    if (dir) rmSync(dir, { recursive: true, force: true })
    host = undefined
    dir = undefined
  })

  async function boot(document = ''): Promise<TestHost> {
    dir = mkdtempSync(join(tmpdir(), 'dshm-recall-settings-'))
    const path = join(dir, 'settings.yaml')
    if (document) writeFileSync(path, document)
    host = await startHost({ settingsPath: path })
    for (const text of ['The staging database runs PostgreSQL 16.', 'The staging database is backed up nightly.', 'The staging database lives in Frankfurt.']) {
      await store(host).memories.add({ kind: 'fact', text, scope: 'global' })
    }
    // Unrelated memories, so "staging database" is as distinctive as in a real store.
    for (const topic of ['gardening tomatoes', 'marathon training', 'jazz records', 'sourdough baking', 'chess openings', 'bird watching', 'sailing knots', 'tax filing']) {
      await store(host).memories.add({ kind: 'fact', text: `The user once mentioned ${topic} in passing.`, scope: 'global' })
    }
    return host
  }

  it('applies a budget and the default mode from the next turn, without a restart', async () => {
    const running = await boot()
    expect(await recalledCount(running, 'Tell me about the staging database')).toBe(3)
    // A browser write (the settings card) goes through the same service call.
    await settings(running).update(RECALL_SETTINGS_NAMESPACE, { recall: { maxResults: 1 } })
    expect(await recalledCount(running, 'And the staging database backups?')).toBe(1)
    // The default mode reaches sessions that never chose one: off means no recall at all.
    await settings(running).update(RECALL_SETTINGS_NAMESPACE, { defaultMode: 'off' })
    expect(await recalledCount(running, 'Where is the staging database?')).toBe(0)
    // Resetting the section re-inherits the row's config.
    await settings(running).replace(RECALL_SETTINGS_NAMESPACE, {})
    expect(await recalledCount(running, 'Where is the staging database again?')).toBe(3)
  })

  it('reads the user document at start and follows edits of the file', async () => {
    const running = await boot(`${RECALL_SETTINGS_NAMESPACE}:\n  recall:\n    maxResults: 2\n`)
    expect(await recalledCount(running, 'Tell me about the staging database')).toBe(2)
    const updated = new Promise((resolve) => running.ctx.on('settings/updated' as never, ((ns: string, _next: unknown, _prev: unknown, source: string) => ns === RECALL_SETTINGS_NAMESPACE && resolve(source)) as never))
    writeFileSync(settings(running).documentPath, `${RECALL_SETTINGS_NAMESPACE}:\n  recall:\n    maxResults: 1\n`)
    expect(await updated).toBe('provider')
    expect(await recalledCount(running, 'And the staging database backups?')).toBe(1)
  })

  it('refuses an invalid value naming the field and keeps the last good value', async () => {
    const running = await boot()
    await settings(running).update(RECALL_SETTINGS_NAMESPACE, { recall: { maxResults: 2 } })
    // The schema refuses a wrong type; recall's own rules refuse what the schema allows.
    await expect(settings(running).update(RECALL_SETTINGS_NAMESPACE, { recall: { maxResults: 'lots' } })).rejects.toThrow(/maxResults/)
    await expect(settings(running).update(RECALL_SETTINGS_NAMESPACE, { recall: { maxResults: 0 } })).rejects.toThrow(/recall\.maxResults/)
    await expect(settings(running).update(RECALL_SETTINGS_NAMESPACE, { embedding: { enabled: true } })).rejects.toThrow(/embedding\.baseUrl/)
    expect(settings(running).get(RECALL_SETTINGS_NAMESPACE).recall.maxResults).toBe(2)
    expect(await recalledCount(running, 'Tell me about the staging database')).toBe(2)
  })

  it('keeps the embeddings API key out of every described layer', async () => {
    const running = await boot()
    await settings(running).update(RECALL_SETTINGS_NAMESPACE, { embedding: { apiKey: 'sk-live-secret-123456' } })
    const [descriptor] = settings(running).describe({ redactSecrets: true }).filter((entry: any) => entry.ns === RECALL_SETTINGS_NAMESPACE)
    expect(descriptor.secrets).toEqual([{ path: ['embedding', 'apiKey'], set: true }])
    expect(JSON.stringify(descriptor)).not.toContain('sk-live-secret-123456')
    // The host itself runs with it.
    expect(settings(running).get(RECALL_SETTINGS_NAMESPACE).embedding.apiKey).toBe('sk-live-secret-123456')
  })
})
