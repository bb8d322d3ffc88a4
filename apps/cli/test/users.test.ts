/**
 * `--user` / `DSH_MEMORY_USER`: who the CLI works as. Global memories are counted, listed and
 * found for that user only; workspace memories are the team's and show their author; `migrate`
 * stamps the target user on rows from before user identities.
 */
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cli, scratch } from './helpers.ts'

const ALICE = 'alice@example.com'
const BOB = 'bob@example.com'
const WS = '/srv/共有/shop'

let temp: ReturnType<typeof scratch>
let dataDir: string
let privateId: string
let teamId: string

beforeAll(async () => {
  temp = scratch('users')
  dataDir = join(temp.dir, 'memory')
  const path = join(dataDir, 'memory.db')
  const alice = openMemoryStore({ path, user: ALICE })
  privateId = (await alice.memories.add({ kind: 'preference', text: 'Alice drinks 抹茶 every morning', scope: 'global' })).id
  teamId = (await alice.memories.add({ kind: 'fact', text: 'The shop is deployed every morning by the otter pipeline', scope: 'workspace', workspace: WS })).id
  await alice.close()
  const bob = openMemoryStore({ path, user: BOB })
  await bob.memories.add({ kind: 'preference', text: 'Bob drinks espresso every morning', scope: 'global' })
  await bob.close()
})
afterAll(() => temp.cleanup())

const dd = () => ['--data-dir', dataDir]

describe('--user', () => {
  it('status says who it counts for, and counts global memories of that user only', async () => {
    const asAlice = await cli(['status', '--json', '--user', ALICE, ...dd()])
    expect(asAlice.code).toBe(0)
    const report = JSON.parse(asAlice.stdout) as { user: string; counts: { memories: { byScope: Record<string, number> } } }
    expect(report.user).toBe(ALICE)
    expect(report.counts.memories.byScope).toEqual({ global: 1, workspace: 1 })
    const text = await cli(['--user', BOB, 'status', ...dd()])
    expect(text.stdout).toContain(`user      ${BOB}`)
  })

  it('search and show: another user’s global memory is not there; a workspace memory names its author', async () => {
    const asBob = await cli(['search', 'morning', '--user', BOB, ...dd()])
    expect(asBob.code).toBe(0)
    expect(asBob.stdout).toContain(teamId)
    expect(asBob.stdout).toContain(`by ${ALICE}`)
    expect(asBob.stdout).not.toContain(privateId)
    expect((await cli(['show', privateId, '--user', BOB, ...dd()])).code).toBe(3)
    expect((await cli(['show', privateId, '--user', ALICE, ...dd()])).stdout).toContain('抹茶')
    expect((await cli(['forget', privateId, '--user', BOB, ...dd()])).code).toBe(3)
  })

  it('reads DSH_MEMORY_USER when no --user is given; a bad identity is a usage error naming its source', async () => {
    const previous = process.env.DSH_MEMORY_USER
    process.env.DSH_MEMORY_USER = BOB
    try {
      expect(JSON.parse((await cli(['status', '--json', ...dd()])).stdout).user).toBe(BOB)
      process.env.DSH_MEMORY_USER = 'bad\u0007bell'
      const bad = await cli(['status', ...dd()])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toContain('DSH_MEMORY_USER: must be')
    } finally {
      if (previous === undefined) delete process.env.DSH_MEMORY_USER
      else process.env.DSH_MEMORY_USER = previous
    }
    const flag = await cli(['status', '--user', 'line\nbreak', ...dd()])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('--user: must be')
  })

  it('migrate stamps the target user on unattributed rows and keeps the authors of the others', async () => {
    const legacyDir = join(temp.dir, 'legacy')
    const legacy = openMemoryStore({ path: join(legacyDir, 'memory.db'), user: ALICE })
    const header = JSON.stringify({ type: 'header', format: 'dsh-memory-export', version: 1, exportedAt: 1, schema: 5 })
    const old = { id: '0190a000-0000-7000-8000-0000000000aa', kind: 'fact', text: 'Written before user identities', scope: 'global', workspace: null, sessionId: null, sourceMessageIds: [], priority: 0, revision: 1, createdAt: 1_000, updatedAt: 1_000, lastRecalledAt: null, supersededBy: null, embedding: null, embeddingModel: null, flags: {} }
    await legacy.importJsonl([header, JSON.stringify({ type: 'memory', data: old })])
    const mine = await legacy.memories.add({ kind: 'fact', text: 'Alice wrote this', scope: 'workspace', workspace: WS })
    await legacy.close()
    const target = join(temp.dir, 'migrated')
    const result = await cli(['migrate', '--from', legacyDir, '--to', target, '--user', ALICE])
    expect(result.code).toBe(0)
    const moved = openMemoryStore({ path: join(target, 'memory.db'), user: ALICE })
    try {
      expect((await moved.memories.get(old.id))!.createdBy).toBe(ALICE)
      expect((await moved.memories.get(mine.id))!.createdBy).toBe(ALICE)
    } finally {
      await moved.close()
    }
  })
})
