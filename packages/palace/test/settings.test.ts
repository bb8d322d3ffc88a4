/**
 * Live settings of the palace: the namespace `memory-palace` on the host's real settings
 * service (the file provider from the pinned DSH install). A new recall strength reaches the
 * next turn's notes and system-prompt guidance without a restart; an invalid one is refused
 * naming the field and the last good value stays.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import LlmRuntime from '@deepseek-ai/dsh-llm'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as palace from '../src/plugin.js'
import { PALACE_SETTINGS_NAMESPACE } from '../src/settings.js'
import { EventLog, tempDir } from './fixtures.js'
import { hostAgent, testHost, type HostRecord } from './host.js'

const SETTINGS_FILE = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai', 'dsh-settings-file', 'lib', 'index.js')
const FORCED = 'Search the palace before answering every user message'

let temp: ReturnType<typeof tempDir>
let root: Context
let record: HostRecord

beforeEach(async () => {
  if (!existsSync(SETTINGS_FILE)) throw new Error(`the pinned DSH host is not installed (missing ${SETTINGS_FILE}); run \`npm run setup\` first`)
  temp = tempDir('settings')
  mkdirSync(join(temp.dir, 'work'), { recursive: true })
  record = { tools: new Map(), sections: new Map(), pressure: { totalTokens: 0 } }
  root = new Context()
  await root.plugin((await import(SETTINGS_FILE)).default, { path: join(temp.dir, 'settings.yaml'), watch: false })
  await root.plugin(MemoryStoreService, { dataDir: join(temp.dir, 'data') })
  await root.plugin(LlmRuntime)
  await root.plugin(testHost(record))
  await root.plugin(palace, palace.Config({ recallStrength: 'low' }) as palace.Config)
})
afterEach(async () => {
  await root?.fiber.dispose()
  temp.remove()
})

/** The notes pre-step adds after a human message, and the guidance section, for one session. */
async function turn(agent: ReturnType<typeof hostAgent>): Promise<{ notes: string[]; guidance: string }> {
  const human = { id: `h${Math.random()}`, role: 'user', content: [{ type: 'text', text: 'what did we decide?' }], source: { kind: 'user' } }
  const decision = await (root as unknown as { waterfall(name: string, payload: unknown, next: () => Promise<unknown>): Promise<{ messages: { content: { text: string }[] }[] }> }).waterfall(
    'agent/pre-step',
    { agent, messages: [human], turn: 1, step: 1, signal: new AbortController().signal },
    async () => ({ kind: 'enter', messages: [human] }),
  )
  return { notes: decision.messages.slice(1).map((message) => message.content[0]!.text), guidance: record.sections.get('memory-palace:recall')!.text({ agent }) }
}

describe('palace live settings (namespace memory-palace)', () => {
  it('applies a new recall strength from the next turn, without a restart', async () => {
    const agent = hostAgent('s1', join(temp.dir, 'work'), new EventLog().events)
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })
    const before = await turn(agent)
    expect(before.guidance).not.toContain(FORCED)
    expect(before.notes).toEqual([])
    await (root as any).settings.update(PALACE_SETTINGS_NAMESPACE, { recallStrength: 'forced' })
    const after = await turn(agent)
    expect(after.guidance).toContain(FORCED)
    expect(after.notes).toEqual([expect.stringContaining('Archived memory is empty')])
  })

  it('refuses an invalid strength naming the field and keeps the last good one', async () => {
    await expect((root as any).settings.update(PALACE_SETTINGS_NAMESPACE, { recallStrength: 'sometimes' })).rejects.toThrow(/recallStrength/)
    await expect((root as any).settings.update(PALACE_SETTINGS_NAMESPACE, { recallBudgetRounds: 99 })).rejects.toThrow(/recallBudgetRounds/)
    expect((root as any).settings.get(PALACE_SETTINGS_NAMESPACE).recallStrength).toBe('low')
    const agent = hostAgent('s2', join(temp.dir, 'work'), new EventLog().events)
    expect((await turn(agent)).guidance).not.toContain(FORCED)
  })
})
