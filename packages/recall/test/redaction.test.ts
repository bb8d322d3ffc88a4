import { redactionMarker } from '@dsh-memory/store'
import { afterEach, describe, expect, it } from 'vitest'
import { analyze } from '../src/core/analyzer.ts'
import { rankMemories } from '../src/core/memory-ranking.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { RecallEngine } from '../src/core/recall-engine.ts'
import { modePolicy } from '../src/core/session-modes.ts'
import { tempStore } from './support/store.ts'

const QUESTION = 'Which database does our API use?'
const KEY = 'sk-proj-AbCdEfGhIjKlMnOpQrStUv0123456789'
const NOW = Date.UTC(2026, 10, 30)

function memory(id: string, text: string) {
  return { id, text, kind: 'fact', scope: 'workspace', createdAt: NOW, updatedAt: NOW }
}

describe('redaction placeholders never match in recall', () => {
  let handle: ReturnType<typeof tempStore> | undefined
  afterEach(async () => {
    await handle?.cleanup()
    handle = undefined
  })

  it('the analyzer gives a placeholder no terms', () => {
    expect(analyze(`The staging deploy key is ${redactionMarker('api-key')}`)).toEqual(analyze('The staging deploy key is'))
    expect(analyze(`${redactionMarker('bearer-token')} ${redactionMarker('env-secret')}`)).toEqual([])
  })

  it('ranking never puts a secret-bearing memory first because of its placeholder', () => {
    const memories = [
      memory('secret', `The staging deploy key is ${redactionMarker('api-key')}`),
      memory('answer', 'Orders are stored in PostgreSQL 16, the main database.'),
      memory('backups', 'Database backups run nightly at 02:00.'),
    ]
    const ranked = rankMemories(QUESTION, memories, { strategy: 'keyword', decayHalfLifeDays: 0, now: NOW })
    // Before, the placeholder's "api" (rarer than "database" here) ranked the key first.
    expect(ranked.map((scored) => scored.memory.id).sort()).toEqual(['answer', 'backups'])
  })

  it('a turn about "our API" recalls the database memories, never the redacted key (real store)', async () => {
    handle = tempStore()
    const { store } = handle
    const scope = { sessionId: 's', workspace: '/w' }
    const secret = await store.memories.add({ kind: 'fact', text: `The staging deploy key is ${KEY}`, scope: 'workspace', workspace: '/w' })
    expect(secret.text).toContain(redactionMarker('api-key'))
    const answer = await store.memories.add({ kind: 'fact', text: 'Orders are stored in PostgreSQL 16, the main database.', scope: 'workspace', workspace: '/w' })
    const backups = await store.memories.add({ kind: 'fact', text: 'Database backups run nightly at 02:00.', scope: 'workspace', workspace: '/w' })
    const engine = new RecallEngine(store, resolveRecallOptions({ recall: { scoreThreshold: 0 } }))
    const hits = await engine.searchMemories(QUESTION, scope)
    expect(hits.map((hit) => hit.memory.id).sort()).toEqual([answer.id, backups.id].sort())
    const turn = await engine.recallForTurn(QUESTION, scope, modePolicy(engine.options.defaultMode), new Set())
    const injected = turn.selection.selected.map((selected) => selected.scored.memory.id)
    expect(injected.length).toBeGreaterThan(0)
    expect(injected).not.toContain(secret.id)
  })
})
