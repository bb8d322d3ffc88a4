import { describe, expect, it, onTestFinished } from 'vitest'
import { startModelServer, type ModelServer } from '../src/model-server.js'

async function post(server: ModelServer, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
}

function frames(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6))
    .map((payload) => (payload === '[DONE]' ? '[DONE]' : JSON.parse(payload)))
}

describe('scripted model server', () => {
  it('binds loopback only and streams text deltas, a stop frame, usage and [DONE]', async () => {
    const server = await startModelServer()
    onTestFinished(() => server.close())
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const response = await post(server, { messages: [{ role: 'user', content: 'ping' }], stream: true }, { 'x-deepseek-harness-session-id': 's1' })
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const parsed = frames(await response.text())
    expect(parsed.at(-1)).toBe('[DONE]')
    const text = parsed
      .flatMap((frame) => (typeof frame === 'object' ? ((frame as { choices: { delta?: { content?: string } }[] }).choices ?? []) : []))
      .map((choice) => choice.delta?.content ?? '')
      .join('')
    expect(text).toBe('OK: ping')
    expect(parsed.some((frame) => typeof frame === 'object' && 'usage' in (frame as object))).toBe(true)
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]!.purpose).toBe('chat')
  })

  it('scripts tool calls with fragmented arguments and finish_reason tool_calls', async () => {
    const server = await startModelServer({ responder: () => ({ kind: 'tools', calls: [{ name: 'memory_search', arguments: { query: '数据库' } }] }) })
    onTestFinished(() => server.close())
    const parsed = frames(await (await post(server, { messages: [], tools: [{ type: 'function', function: { name: 'memory_search' } }] })).text())
    type Choice = { delta: { tool_calls?: { function: { name?: string; arguments?: string } }[] }; finish_reason: string | null }
    const choices = parsed.flatMap((frame) => (typeof frame === 'object' ? ((frame as { choices: Choice[] }).choices ?? []) : []))
    const args = choices.flatMap((choice) => choice.delta.tool_calls ?? []).map((call) => call.function.arguments ?? '').join('')
    expect(JSON.parse(args)).toEqual({ query: '数据库' })
    expect(choices.some((choice) => choice.finish_reason === 'tool_calls')).toBe(true)
  })

  it('answers scripted HTTP errors and garbage, and classifies title and compaction requests', async () => {
    let call = 0
    const server = await startModelServer({
      responder: () => (call++ === 0 ? { kind: 'http-error', status: 500 } : { kind: 'garbage', body: 'not json at all' }),
    })
    onTestFinished(() => server.close())
    expect((await post(server, { messages: [] })).status).toBe(500)
    const garbage = await post(server, { messages: [], max_tokens: 64 })
    expect(await garbage.text()).toBe('not json at all')
    server.setResponder(undefined)
    await (await post(server, { messages: [] }, { 'x-deepseek-harness-compact': '1' })).text()
    expect(server.requests.map((request) => request.purpose)).toEqual(['background', 'title', 'compaction'])
  })
})

describe('lastUserText', () => {
  it('returns the human prompt, skipping the host runtime-context snapshot and fenced plugin blocks', async () => {
    const { lastUserText } = await import('../src/model-server.js')
    expect(
      lastUserText({
        messages: [
          { role: 'system', content: 'You are…' },
          { role: 'user', content: 'first question' },
          { role: 'assistant', content: 'answer' },
          { role: 'user', content: 'second question' },
          { role: 'user', content: '<recalled-memories>…</recalled-memories>' },
          { role: 'user', content: 'Current runtime context. This snapshot supersedes…' },
        ],
      }),
    ).toBe('second question')
  })
})
