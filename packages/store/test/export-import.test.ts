import { describe, expect, it } from 'vitest'
import { openTemp } from './helpers.ts'
import { populate } from './support/seed.ts'

// The rest of export/import runs on both backends: contract/export-import.test.ts.
describe('export / import (SQLite only)', () => {
  it('exports an in-memory store (no second connection to take a snapshot on)', async () => {
    const { store } = openTemp({ path: ':memory:' })
    await populate(store)
    const { store: target } = openTemp()
    expect((await target.importJsonl(store.exportJsonl())).inserted).toEqual({ conversations: 2, messages: 4, memories: 4, scenes: 1, persona: 2 })
  })
})
