/**
 * The memory browser over a PostgreSQL store (`startMemoryBrowser({ store })`, what
 * `dsh-memory serve --database-url` runs): the fixture is written to a fresh schema on the run's
 * throwaway cluster through the same public APIs, and every page and the API read and write it there.
 */
import { describe, expect, it } from 'vitest'
import { backends } from '../../store/test/contract/backends.ts'
import { servedFixture } from './fixture.ts'

const postgres = backends.find((backend) => backend.name === 'postgres')!
const served = servedFixture('postgres', () => postgres.fresh() as { databaseUrl: string; schema: string })

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${served.app.origin}/api${path}`, { ...init, headers: { 'x-dshm-token': served.app.token, 'content-type': 'application/json' } })
const page = async (path: string) => {
  const res = await fetch(`${served.app.origin}${path}`, { headers: { 'x-dshm-token': served.app.token } })
  return { status: res.status, text: await res.text() }
}

describe('the memory browser on PostgreSQL', () => {
  it('shows the overview, the Chinese search, the cue bank, the palace and the memory tree from the database', async () => {
    const overview = (await (await api('/overview')).json()) as { counts: { conversations: number; memories: { current: number } } }
    expect(overview.counts.conversations).toBe(2)
    expect(overview.counts.memories.current).toBeGreaterThan(10)
    const found = (await (await api(`/memories?q=${encodeURIComponent('数据库')}`)).json()) as { items: { memory: { id: string } }[] }
    expect(JSON.stringify(found)).toContain(served.fixture.memories.database)
    for (const path of ['/cues', '/palace', '/tree', `/conversations/${served.fixture.conversations.blog}`]) {
      const shown = await page(path)
      expect(shown.status, path).toBe(200)
    }
    expect((await page(`/conversations/${served.fixture.conversations.blog}`)).text).toContain('ブログは Astro で作って')
    expect((await page('/tree')).text).toContain(`<a href="/tree/${served.fixture.projectId}"><strong>Shop API</strong></a>`)
  })

  it('edits and forgets memories in the database (a new version, history kept)', async () => {
    const edit = await api(`/memories/${served.fixture.memories.deployDay}/edit`, { method: 'POST', body: JSON.stringify({ text: 'Deploy the shop API on Tuesdays only.' }) })
    expect(edit.status).toBe(200)
    const { id } = (await edit.json()) as { id: string }
    const detail = JSON.stringify(await (await api(`/memories/${id}`)).json())
    expect(detail).toContain('Deploy the shop API on Tuesdays only.')
    expect(detail).toContain('Deploy the shop API on Mondays.')
    expect((await api(`/memories/${served.fixture.memories.flaky}/forget`, { method: 'POST', body: '{}' })).status).toBe(200)
    expect((await api(`/memories/${served.fixture.memories.flaky}`)).status).toBe(404)
  })
})
