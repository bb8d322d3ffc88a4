import { describe, expect, it } from 'vitest'
import { redactionMarker, TOKENIZER_VERSION } from '../../src/index.ts'
import { encodeTerm } from '../../src/core/search-plan.ts'
import { backends } from './backends.ts'
import { searchIndexOf } from './search-index.ts'

// The words a marker is made of; none of them may come out of a marker as a search term.
const MARKER_WORDS = ['redacted', 'api', 'key', 'api-key', 'token', 'env', 'secret', 'password', 'url', 'private', 'bearer', 'aws', 'access']
const KEY = 'sk-proj-AbCdEfGhIjKlMnOpQrStUv0123456789'

const memoryTexts = (hits: { memory: { text: string } }[]) => hits.map((hit) => hit.memory.text)

// The tokenizer's side: ../redaction-search.test.ts.
describe.each(backends)('redaction markers are never search terms ($name)', (backend) => {
  const index = searchIndexOf(backend)

  it('a question about "our API" does not find the memory whose secret was redacted, in memories or messages', async () => {
    const store = await backend.open()
    const secret = await store.memories.add({ kind: 'fact', text: `The staging deploy key is ${KEY}`, scope: 'global' })
    expect(secret.text).toBe(`The staging deploy key is ${redactionMarker('api-key')}`)
    const answer = await store.memories.add({ kind: 'fact', text: 'Orders are stored in PostgreSQL 16, the main database.', scope: 'global' })
    const backups = await store.memories.add({ kind: 'fact', text: 'Database backups run nightly at 02:00.', scope: 'global' })
    const hits = await store.search.memories('Which database does our API use?')
    // Only the two memories about a database; before, the placeholder's "api" put the key first.
    expect(hits.map((hit) => hit.memory.id).sort()).toEqual([answer.id, backups.id].sort())
    for (const word of ['redacted', 'api', 'redacted api', redactionMarker('api-key')]) expect([word, await store.search.memories(word)]).toEqual([word, []])

    await store.conversations.ensure({ id: 'c', workspace: '/w' })
    await store.messages.append({ conversationId: 'c', hostMessageId: 'h1', role: 'user', text: `here it is: ${KEY}` })
    const said = await store.messages.append({ conversationId: 'c', hostMessageId: 'h2', role: 'user', text: 'Our API talks to the billing service.' })
    expect((await store.search.messages('api')).map((hit) => hit.message.id)).toEqual([said.message.id])
    await store.close()
  })

  it('an index built by the old tokenizer, placeholders included, is rebuilt at open and stops matching them', async () => {
    const store = await backend.open()
    const secret = await store.memories.add({ kind: 'fact', text: `Prod key: ${KEY}`, scope: 'global' })
    await store.close()
    // What the previous tokenizer wrote for this memory: the marker's words as terms.
    await index.setState(store, { ...(await index.state(store)), tokenizer: 'icu-words+cjk-bigrams/1' })
    await index.addMemoryTerms(store, secret.id, ['prod', 'key', 'redacted', 'api-key', 'api', 'key'].map(encodeTerm))

    const next = await backend.reopen(store)
    expect(await next.search.status()).toMatchObject({ built: true, reason: 'tokenizer-changed', tokenizerVersion: TOKENIZER_VERSION })
    // ("key" is the memory's own word: "Prod key".)
    for (const word of MARKER_WORDS.filter((word) => !word.includes('key'))) expect([word, await next.search.memories(word)]).toEqual([word, []])
    // The memory's own words still find it.
    expect(memoryTexts(await next.search.memories('prod'))).toEqual([secret.text])
    await next.close()
  })
})
