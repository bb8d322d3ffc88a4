import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { evaluateLocomo, loadLocomo, runLocomoBench, turnText } from '../src/bench/locomo.ts'
import { normaliseEvidence, parseLocomo, parseSessionDate } from '../src/bench/locomo-format.ts'
import { benchDatabaseUrl, benchSchemasLeft } from './bench-pg.ts'
import { cli } from './helpers.ts'
import { type EmbeddingServer, startEmbeddingServer, startLoopback } from '../../../packages/recall/test/support/loopback.ts'
import { cjkDistractors, runCjkBench } from '../src/bench/cjk.ts'
import { benchEmbedding } from '../src/commands/bench.ts'
import { PARAPHRASE_PAIRS, UNANSWERABLE_QUERIES } from '../src/bench/cjk-pairs.ts'

const here = dirname(fileURLToPath(import.meta.url))
const FIXTURE = join(here, 'fixtures/locomo-mini.json')
const scratch = mkdtempSync(join(tmpdir(), 'dshm-cli-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('the LoCoMo format', () => {
  it('parses samples, session dates, packed and malformed evidence, observations', async () => {
    const { readFile } = await import('node:fs/promises')
    const [sample] = parseLocomo(JSON.parse(await readFile(FIXTURE, 'utf8')))
    expect(sample!.speakers).toEqual(['Ana', 'Ben'])
    expect(sample!.sessions.map((session) => [session.index, new Date(session.time).toISOString()])).toEqual([
      [1, '2024-03-01T10:00:00.000Z'],
      [2, '2024-03-20T14:30:00.000Z'],
    ])
    expect(sample!.questions[1]!.evidence).toEqual(['D1:2', 'D2:1'])
    expect(sample!.questions[5]!.evidence).toEqual([])
    expect(sample!.observations).toHaveLength(3)
    expect(normaliseEvidence(['D8:6; D9:17', 'D1:2,D1:3', 'bad', 7])).toEqual(['D8:6', 'D9:17', 'D1:2', 'D1:3'])
    expect(parseSessionDate('12:05 am on 2 January, 2023')).toBe(Date.UTC(2023, 0, 2, 0, 5))
    expect(Number.isNaN(parseSessionDate('yesterday'))).toBe(true)
  })

  it('names the offending path of a file that is not LoCoMo-shaped', () => {
    expect(() => parseLocomo({})).toThrow(/^\$: expected a JSON array/)
    expect(() => parseLocomo([{ sample_id: 'x', conversation: { speaker_a: 'A', speaker_b: 'B', session_1: [{ speaker: 'A', dia_id: 'D1:1' }], session_1_date_time: '1:00 pm on 1 May, 2023' }, qa: [] }])).toThrow(
      /\$\[0\]\.conversation\.session_1\[0\]\.text: expected a string/,
    )
    expect(() => parseLocomo([{ sample_id: 'x', conversation: { speaker_a: 'A', speaker_b: 'B', session_1: [], session_1_date_time: 'soon' }, qa: [] }])).toThrow(/session_1_date_time: unrecognised date/)
  })
})

describe('the benchmark', () => {
  it('loads turns as L0 messages with their session time, and observations as L1 memories linked to the turns', async () => {
    const { readFile } = await import('node:fs/promises')
    const samples = parseLocomo(JSON.parse(await readFile(FIXTURE, 'utf8')))
    const dir = mkdtempSync(join(scratch, 'load-'))
    const store = openMemoryStore({ path: join(dir, 'memory.db') })
    try {
      await loadLocomo(store, samples, true)
      const messages = await store.messages.list({ workspace: 'locomo/fx-1' })
      expect(messages).toHaveLength(6)
      const beach = messages.find((message) => message.hostMessageId === 'D2:2')!
      expect(beach.text).toBe(turnText({ speaker: 'Ana', text: 'Pixel loves the beach.', imageCaption: 'a dog running on sand' }))
      expect(beach.createdAt).toBe(Date.UTC(2024, 2, 20, 14, 30) + 1000)
      expect(beach.role).toBe('user')
      const memories = await store.memories.list({ workspace: 'locomo/fx-1', includeGlobal: false })
      const cello = memories.find((memory) => memory.text.includes('cello'))!
      expect(cello.sourceMessageIds).toEqual([messages.find((message) => message.hostMessageId === 'D1:2')!.id])
      // The ranking reads the store back: an easy question finds its turn first.
      const metrics = await evaluateLocomo(store, samples, 'turns', [1, 3])
      expect(metrics.by_category['4']!.questions).toBe(2)
    } finally {
      await store.close()
    }
  })

  it('measures recall_any/recall_all per k and per category, skipping category 5 and questions without evidence', async () => {
    const { readFile } = await import('node:fs/promises')
    const samples = parseLocomo(JSON.parse(await readFile(FIXTURE, 'utf8')))
    const report = await runLocomoBench(samples, { ks: [1, 6], modes: ['turns', 'turns+observations'], workDir: scratch })
    for (const mode of ['turns', 'turns+observations'] as const) {
      const metrics = report[mode]!
      expect(Object.keys(metrics)).toEqual(['recall_any', 'recall_all', 'by_category'])
      expect(Object.fromEntries(Object.entries(metrics.by_category).map(([category, value]) => [category, value.questions]))).toEqual({ '1': 1, '2': 1, '3': 1, '4': 2 })
      for (const k of ['1', '6']) {
        expect(metrics.recall_all[k]).toBeLessThanOrEqual(metrics.recall_any[k]!)
        expect(metrics.recall_any[k]).toBeGreaterThanOrEqual(0)
        expect(metrics.recall_any[k]).toBeLessThanOrEqual(1)
      }
      expect(metrics.recall_any['6']).toBeGreaterThanOrEqual(metrics.recall_any['1']!)
      // Six turns per sample, k = 6: every evidence turn that matches anything is found.
      expect(metrics.recall_all['6']).toBe(1)
      // "Where does Ana's sister live?" is answered by the first turn returned.
      expect(metrics.by_category['4']!.recall_any['1']).toBeGreaterThanOrEqual(0.5)
    }
  })
})

describe('dsh-memory bench locomo (command line)', () => {
  it('--database-url runs the same load and questions on SQLite and on PostgreSQL: {sqlite, postgres} of one shape, then drops the schema', async () => {
    const result = await cli(['bench', 'locomo', '--data', FIXTURE, '--k', '5,10', '--json', '--quiet', '--database-url', benchDatabaseUrl()])
    expect(result.code).toBe(0)
    const reports = JSON.parse(result.stdout)
    expect(Object.keys(reports)).toEqual(['sqlite', 'postgres'])
    for (const report of Object.values<Record<string, { recall_any: Record<string, number>; by_category: object }>>(reports)) {
      expect(Object.keys(report)).toEqual(['turns', 'turns+observations', 'injection'])
      expect(Object.keys(report.turns!.recall_any)).toEqual(['5', '10'])
      expect(Object.keys(report.turns!.by_category)).toEqual(['1', '2', '3', '4'])
    }
    // Ranking is the recall core's on both; the PostgreSQL store's candidates find the evidence too.
    expect(reports.postgres.turns.recall_any['10']).toBeGreaterThan(0)
    expect(await benchSchemasLeft()).toEqual([])
  })

  it('--database-url without --json prints each backend and the difference in points', async () => {
    const result = await cli(['bench', 'locomo', '--data', FIXTURE, '--k', '5', '--mode', 'turns', '--quiet', '--database-url', benchDatabaseUrl()])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^== sqlite\nmode turns/m)
    expect(result.stdout).toMatch(/^== postgres\nmode turns/m)
    expect(result.stdout).toMatch(/^postgres − sqlite turns recall_any \(points\): @5 [+-]\d+\.\d \((within|NOT within) 1 point\)$/m)
  })

  it('--json prints exactly one object of the documented shape on stdout, progress lines on stderr', async () => {
    const result = await cli(['bench', 'locomo', '--data', FIXTURE, '--k', '5,10', '--json'])
    expect(result.code).toBe(0)
    expect(result.stdout.trim().split('\n')).toHaveLength(1)
    const report = JSON.parse(result.stdout)
    expect(Object.keys(report)).toEqual(['turns', 'turns+observations', 'injection'])
    expect(Object.keys(report.turns.recall_any)).toEqual(['5', '10'])
    expect(Object.keys(report.turns.recall_all)).toEqual(['5', '10'])
    expect(Object.keys(report.turns.by_category)).toEqual(['1', '2', '3', '4'])
    expect(result.stderr).toMatch(/^load: 0\/1$/m)
    expect(result.stderr).toMatch(/^turns: 5\/5$/m)
  })

  it('--mode injection measures what the automatic recall injects, per category', async () => {
    const result = await cli(['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--samples', 'fx-1', '--json', '--quiet'])
    expect(result.code).toBe(0)
    const { injection } = JSON.parse(result.stdout)
    expect(injection.questions).toBe(5)
    expect(Object.keys(injection.by_category)).toEqual(['1', '2', '3', '4'])
    for (const key of ['precision', 'recall', 'hit_rate', 'false_injection_rate']) {
      expect(injection[key]).toBeGreaterThanOrEqual(0)
      expect(injection[key]).toBeLessThanOrEqual(1)
    }
    // The fixture's observations answer its single-hop questions: something relevant is injected.
    expect(injection.by_category['4'].hit_rate).toBeGreaterThan(0)
    expect(injection.timeouts).toBe(0)
    // Keyword ranking has no hybrid threshold: the object is as before it existed.
    expect(injection).not.toHaveProperty('hybrid_threshold')
  })

  it('--threshold runs the injection mode with another score threshold, and refuses one outside 0..1', async () => {
    const args = ['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--samples', 'fx-1', '--json', '--quiet']
    const defaults = JSON.parse((await cli(args)).stdout).injection
    expect(defaults.threshold).toBe(0.3)
    expect(defaults.injected_questions).toBeGreaterThan(0)
    // Relevance is below 1 by construction (s / (s + u)): nothing passes 0.999.
    const strict = await cli([...args, '--threshold', '0.999'])
    expect(strict.code).toBe(0)
    expect(JSON.parse(strict.stdout).injection).toMatchObject({ threshold: 0.999, injected_questions: 0, injected_per_question: 0 })
    for (const bad of ['2', '-0.1', 'high']) {
      const refused = await cli([...args, '--threshold', bad])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain(`--threshold expects a number between 0 and 1 (like 0.3), got "${bad}"`)
    }
  })

  it('--minilm embeds the turns and questions with the real MiniLM once, then re-ranks mode turns; with mode injection it ranks memories hybrid', async () => {
    const args = ['bench', 'locomo', '--data', FIXTURE, '--k', '5,10', '--mode', 'turns', '--json']
    const plain = await cli(args)
    const fused = await cli([...args, '--minilm'])
    expect(fused.code).toBe(0)
    expect(fused.stderr).toMatch(/^minilm: 1\/1 \(fx-1\)$/m)
    expect(plain.stderr).not.toMatch(/^minilm:/m)
    const report = JSON.parse(fused.stdout)
    expect(Object.keys(report)).toEqual(['turns'])
    expect(Object.keys(report.turns.by_category)).toEqual(['1', '2', '3', '4'])
    // Re-ranking keeps the candidate set: what the keyword ranking finds at 10 stays within reach.
    expect(report.turns.recall_any['10']).toBeGreaterThan(0)

    // The injection runs hybrid over MiniLM vectors of the memories.
    const injection = await cli(['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--minilm', '--json'])
    expect(injection.code, injection.stderr).toBe(0)
    expect(injection.stderr).toMatch(/^minilm memories: 1\/1 \(fx-1\)$/m)
    expect(JSON.parse(injection.stdout).injection).toMatchObject({ questions: 5, timeouts: 0, threshold: 0.3, hybrid_threshold: 0.85 })
    // --hybrid-threshold calibrates recall.hybridThreshold: nothing on this fixture reaches 0.999.
    const strict = await cli(['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--minilm', '--json', '--quiet', '--hybrid-threshold', '0.999'])
    expect(strict.code, strict.stderr).toBe(0)
    expect(JSON.parse(strict.stdout).injection).toMatchObject({ hybrid_threshold: 0.999, injected_questions: 0, injected_per_question: 0 })
  })

  it('prints a table without --json and a progress bar on a terminal', async () => {
    const result = await cli(['bench', 'locomo', '--data', FIXTURE, '--k', '3', '--mode', 'turns'], { tty: true })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^mode turns \(5 questions\)$/m)
    expect(result.stdout).toMatch(/overall\s+\d+\.\d%\s+\d+\.\d%/)
    expect(result.stdout).not.toMatch(/turns\+observations/)
    expect(result.stderr).toMatch(/\[[█░]+\] \d+\/5/)
  })

  it.each([
    [['bench', 'locomo'], /required option '--data <file>' not specified/],
    [['bench', 'locomo', '--data', FIXTURE, '--k', '0'], /--k expects a comma-separated list of positive integers/],
    [['bench', 'locomo', '--data', FIXTURE, '--k', '5,ten'], /--k expects a comma-separated list of positive integers \(like 5,10\), got "5,ten"/],
    [['bench', 'locomo', '--data', FIXTURE, '--mode', 'sessions'], /argument 'sessions' is invalid. Allowed choices are turns, turns\+observations, injection, all/],
    [['bench', 'locomo', '--data', FIXTURE, '--samples', 'fx-1,conv-99'], /--samples: no sample "conv-99" \(the file holds fx-1\)/],
    [['bench', 'locomo', '--data', FIXTURE, '--samples', ','], /--samples expects a comma-separated list of sample ids/],
    [['bench', 'locomo', '--data', FIXTURE, '--mode', 'turns+observations', '--minilm'], /--minilm applies to modes turns and injection; it does nothing with --mode turns\+observations/],
    [['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--hybrid-threshold', '0.5'], /--hybrid-threshold applies to mode injection with --minilm or --embedding-url/],
    [['bench', 'locomo', '--data', FIXTURE, '--mode', 'injection', '--minilm', '--hybrid-threshold', '2'], /--hybrid-threshold expects a number between 0 and 1 \(like 0.85\), got "2"/],
    [['bench', 'cjk', '--distractors', '0'], /--distractors expects a positive integer, got "0"/],
    [['bench', 'locomo', '--data', '/nonexistent/locomo.json'], /cannot read --data \/nonexistent\/locomo.json: ENOENT/],
    [['bench', 'locomo', '--data', FIXTURE, '--frobnicate'], /unknown option '--frobnicate'/],
    [['bench', 'nope'], /unknown command 'nope'/],
  ])('rejects %j with exit code 2 and a clear message', async (args, message) => {
    const result = await cli(args)
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(message)
    expect(result.stdout).toBe('')
  })

  it('rejects a file that is not JSON or not LoCoMo-shaped', async () => {
    const notJson = join(scratch, 'not.json')
    writeFileSync(notJson, '{ nope')
    const notLocomo = join(scratch, 'object.json')
    writeFileSync(notLocomo, JSON.stringify([{ sample_id: 'x' }]))
    const first = await cli(['bench', 'locomo', '--data', notJson])
    expect(first.code).toBe(2)
    expect(first.stderr).toMatch(/is not valid JSON/)
    const second = await cli(['bench', 'locomo', '--data', notLocomo])
    expect(second.code).toBe(2)
    expect(second.stderr).toMatch(/is not LoCoMo-shaped: \$\[0\]\.conversation: expected an object/)
  })

  it('runs as the dsh-memory executable', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(here, '../src/bin.ts'), 'bench', 'locomo', '--data', FIXTURE, '--k', '2', '--mode', 'turns', '--json', '--quiet'])
    expect(Object.keys(JSON.parse(stdout).turns.recall_any)).toEqual(['2'])
  })
})

describe('dsh-memory bench locomo with a local embedding server (--embedding-url)', () => {
  // One paraphrase shares no word with its evidence turn or its memory ("espresso beverage" /
  // "latte"); the loopback server's concept vectors (packages/recall/test/support/loopback.ts)
  // put both under "coffee", as a real embedding model would.
  const PARAPHRASE = join(scratch, 'locomo-paraphrase.json')
  writeFileSync(
    PARAPHRASE,
    JSON.stringify([
      {
        sample_id: 'para-1',
        conversation: {
          speaker_a: 'Mia',
          speaker_b: 'Tom',
          session_1_date_time: '9:00 am on 2 May, 2024',
          session_1: [
            { speaker: 'Tom', dia_id: 'D1:1', text: 'I order new books online almost daily.' },
            { speaker: 'Mia', dia_id: 'D1:2', text: 'Nice, from what shop?' },
            { speaker: 'Tom', dia_id: 'D1:3', text: 'A small store downtown with fast delivery.' },
          ],
          session_2_date_time: '6:00 pm on 9 May, 2024',
          session_2: [
            { speaker: 'Mia', dia_id: 'D2:1', text: 'Every morning starts with a latte for me.' },
            { speaker: 'Tom', dia_id: 'D2:2', text: 'Sounds cozy.' },
          ],
        },
        observation: {
          session_1_observation: { Tom: [['Tom buys books online from a small downtown store.', 'D1:3']] },
          session_2_observation: { Mia: [['Mia has a latte every morning.', 'D2:1']] },
        },
        qa: [
          { question: 'Where does Tom order books?', answer: 'a small store downtown', evidence: ['D1:3'], category: 4 },
          { question: 'Which espresso beverage is a habit?', answer: 'a latte', evidence: ['D2:1'], category: 3 },
        ],
      },
    ]),
  )
  let server: EmbeddingServer
  beforeEach(async () => {
    server = await startEmbeddingServer()
  })
  afterEach(async () => {
    delete process.env.DSHM_BENCH_TEST_KEY
    await server.close()
  })
  const embedderArgs = () => ['--embedding-url', server.url, '--embedding-model', 'concepts', '--embedding-dimensions', '8']

  it('mode turns: the turns and questions get the server\'s vectors once, and conversation search finds the paraphrase keywords miss', async () => {
    const args = ['bench', 'locomo', '--data', PARAPHRASE, '--k', '1,10', '--mode', 'turns', '--json']
    const plain = await cli(args)
    expect(plain.code, plain.stderr).toBe(0)
    expect(server.requests).toHaveLength(0)
    const keyword = JSON.parse(plain.stdout).turns
    expect(keyword.by_category['3'].recall_any['10']).toBe(0)
    expect(keyword.embedding_model).toBeUndefined()

    const fused = await cli([...args, ...embedderArgs()])
    expect(fused.code, fused.stderr).toBe(0)
    expect(fused.stderr).toMatch(/^embeddings: 1\/1 \(para-1\)$/m)
    const report = JSON.parse(fused.stdout).turns
    expect(report.embedding_model).toBe('concepts@8')
    expect(report.by_category['3'].recall_any['10']).toBe(1)
    // The keyword question keeps its turn within reach.
    expect(keyword.by_category['4'].recall_any['10']).toBe(1)
    expect(report.by_category['4'].recall_any['10']).toBe(1)
    // Recall's request (model and dimensions), each distinct text once: five turns and two questions.
    expect(server.requests.every((request) => request.body.model === 'concepts' && request.body.dimensions === 8)).toBe(true)
    const sent = server.requests.flatMap((request) => request.body.input ?? [])
    expect(sent).toHaveLength(7)
    expect(new Set(sent).size).toBe(7)
    expect(sent).toContain('Mia: Every morning starts with a latte for me.')
    expect(sent).toContain('Which espresso beverage is a habit?')
    expect(server.requests[0]!.headers.authorization).toBeUndefined()
  })

  it('mode injection: memories get vectors and the automatic recall ranks hybrid, injecting the paraphrase\'s memory', async () => {
    const args = ['bench', 'locomo', '--data', PARAPHRASE, '--mode', 'injection', '--json', '--quiet']
    const plain = JSON.parse((await cli(args)).stdout).injection
    expect(plain.by_category['3'].hit_rate).toBe(0)
    expect(plain.embedding_model).toBeUndefined()

    process.env.DSHM_BENCH_TEST_KEY = 'sk-local'
    const hybrid = await cli([...args, ...embedderArgs(), '--embedding-api-key-env', 'DSHM_BENCH_TEST_KEY'])
    expect(hybrid.code, hybrid.stderr).toBe(0)
    const report = JSON.parse(hybrid.stdout).injection
    expect(report).toMatchObject({ embedding_model: 'concepts@8', hybrid_threshold: 0.85, timeouts: 0 })
    expect(report.by_category['3'].hit_rate).toBe(1)
    expect(server.requests.every((request) => request.headers.authorization === 'Bearer sk-local')).toBe(true)
    // The memories (two) were embedded before the questions; each question asked for its vector.
    expect(server.requests.flatMap((request) => request.body.input ?? [])).toEqual(expect.arrayContaining(['Mia has a latte every morning.', 'Which espresso beverage is a habit?']))

    // --strategy embedding orders by meaning; the same gate admits (the paraphrase's cosine is 1).
    const byMeaning = await cli([...args, ...embedderArgs(), '--strategy', 'embedding'])
    expect(byMeaning.code, byMeaning.stderr).toBe(0)
    expect(JSON.parse(byMeaning.stdout).injection).toMatchObject({ strategy: 'embedding', embedding_model: 'concepts@8', by_category: { '3': { hit_rate: 1 } } })
    expect(report.strategy).toBe('hybrid')

    // --hybrid-threshold applies with the endpoint too.
    const other = await cli([...args, ...embedderArgs(), '--hybrid-threshold', '0.9'])
    expect(other.code, other.stderr).toBe(0)
    expect(JSON.parse(other.stdout).injection).toMatchObject({ embedding_model: 'concepts@8', hybrid_threshold: 0.9 })
  })

  it('--database-url runs both backends on the same vectors: each text is sent once', async () => {
    const result = await cli(['bench', 'locomo', '--data', PARAPHRASE, '--k', '10', '--json', '--quiet', '--database-url', benchDatabaseUrl(), ...embedderArgs()])
    expect(result.code, result.stderr).toBe(0)
    const reports = JSON.parse(result.stdout)
    for (const backend of ['sqlite', 'postgres']) {
      expect(reports[backend].turns).toMatchObject({ embedding_model: 'concepts@8', by_category: { '3': { recall_any: { '10': 1 } } } })
      expect(reports[backend].injection).toMatchObject({ embedding_model: 'concepts@8', by_category: { '3': { hit_rate: 1 } } })
    }
    // Five turns, two memories: embedded once for both backends (the questions' own vectors
    // are asked for by each backend's automatic recall, as the plugin asks per turn).
    const sent = server.requests.flatMap((request) => request.body.input ?? [])
    for (const text of ['Mia: Every morning starts with a latte for me.', 'Tom: Sounds cozy.', 'Mia has a latte every morning.']) expect(sent.filter((input) => input === text)).toHaveLength(1)
    expect(await benchSchemasLeft()).toEqual([])
  })

  it('a failing server ends the run with exit 1 and the endpoint\'s error, and prints no figures', async () => {
    server.behaviour = 'http-500'
    const result = await cli(['bench', 'locomo', '--data', PARAPHRASE, '--mode', 'turns', '--json', '--quiet', ...embedderArgs()])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`embedding request to ${server.url}/embeddings failed: HTTP 500`)
  })

  it.each([
    [['--embedding-url', 'http://127.0.0.1:9/v1'], /--embedding-model is required with --embedding-url/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm'], /--embedding-dimensions is required with --embedding-url/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm', '--embedding-dimensions', 'many'], /--embedding-dimensions expects a positive integer, got "many"/],
    [['--embedding-url', 'ftp://127.0.0.1/v1', '--embedding-model', 'm', '--embedding-dimensions', '8'], /--embedding-url: must be an http\(s\) URL, got "ftp:\/\/127.0.0.1\/v1"/],
    [['--embedding-model', 'm'], /--embedding-model needs --embedding-url/],
    [['--mode', 'injection', '--strategy', 'embedding'], /--strategy applies to mode injection with --minilm or --embedding-url/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm', '--embedding-dimensions', '8', '--mode', 'injection', '--strategy', 'keyword'], /argument 'keyword' is invalid. Allowed choices are hybrid, embedding/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm', '--embedding-dimensions', '8', '--minilm'], /--minilm and --embedding-url are two embedders: give one/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm', '--embedding-dimensions', '8', '--embedding-api-key-env', 'DSHM_BENCH_UNSET_KEY'], /--embedding-api-key-env DSHM_BENCH_UNSET_KEY: the environment variable DSHM_BENCH_UNSET_KEY is not set/],
    [['--embedding-url', 'http://127.0.0.1:9/v1', '--embedding-model', 'm', '--embedding-dimensions', '8', '--mode', 'turns+observations'], /--embedding-url applies to modes turns and injection; it does nothing with --mode turns\+observations/],
  ])('refuses %j with exit code 2 before loading anything', async (extra, message) => {
    const result = await cli(['bench', 'locomo', '--data', PARAPHRASE, ...extra])
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(message)
    expect(result.stdout).toBe('')
    expect(server.requests).toHaveLength(0)
  })
})

describe('dsh-memory bench cjk', () => {
  it('holds at least 100 distinct hand-written pairs of every kind, and seeded distractors', () => {
    expect(PARAPHRASE_PAIRS.length).toBeGreaterThanOrEqual(100)
    expect(new Set(PARAPHRASE_PAIRS.map((pair) => pair.memory)).size).toBe(PARAPHRASE_PAIRS.length)
    expect(new Set(PARAPHRASE_PAIRS.map((pair) => pair.kind))).toEqual(new Set(['compound', 'synonym', 'script', 'kana-kanji', 'inflection', 'mixed']))
    expect(cjkDistractors(50)).toEqual(cjkDistractors(50))
    expect(cjkDistractors(3000).filter((text) => /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u.test(text)).length).toBeGreaterThan(1000)
  })

  it('--json prints recall@1/3/10 of the store and the recall ranking, injection hits and false matches', async () => {
    const result = await cli(['bench', 'cjk', '--distractors', '300', '--json'])
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout)
    expect(report.distractors).toBe(300)
    expect(report.overall.pairs).toBe(PARAPHRASE_PAIRS.length)
    expect(Object.keys(report.by_kind).sort()).toEqual(['compound', 'inflection', 'kana-kanji', 'mixed', 'script', 'synonym'])
    for (const path of ['store', 'recall'] as const) {
      expect(Object.keys(report.overall[path])).toEqual(['1', '3', '10'])
      expect(report.overall[path]['10']).toBeGreaterThanOrEqual(report.overall[path]['1'])
      // Inflected Japanese shares its stem with the memory: the keyword paths find most of it.
      expect(report.by_kind.inflection[path]['10']).toBeGreaterThan(0.5)
    }
    expect(report.overall.false_per_query).toBeGreaterThanOrEqual(0)
    expect(report.unanswerable.queries).toBe(UNANSWERABLE_QUERIES.length)
    const table = await cli(['bench', 'cjk', '--distractors', '300'])
    expect(table.stdout).toMatch(/^CJK paraphrase set: \d+ pairs among 300 distractor memories$/m)
    expect(table.stdout).toMatch(/^ {2}unanswerable queries: \d+ of \d+ got an injection/m)
  })

  describe('with a local embedding server (--embedding-url)', () => {
    // A stand-in for a multilingual model: a small bag of characters, plus one concept that
    // joins the kana and the kanji spelling of "apple", which share no character.
    const readingVector = (text: string): number[] => {
      const vector = new Array<number>(16).fill(0)
      const chars = [...text]
      for (const char of chars) vector[char.codePointAt(0)! % 14]! += 0.3 / chars.length
      if (text.includes('りんご') || text.includes('林檎')) vector[14] = 1
      vector[15] = 0.01
      return vector
    }
    let server: Awaited<ReturnType<typeof startLoopback>>
    const inputs: string[] = []
    beforeEach(async () => {
      inputs.length = 0
      server = await startLoopback((request, response) => {
        const body = JSON.parse(request.body) as { input: string[] }
        inputs.push(...body.input)
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: body.input.map((text, index) => ({ index, embedding: readingVector(text) })) }))
      })
    })
    afterEach(() => server.close())
    const apple = [PARAPHRASE_PAIRS.find((pair) => pair.memory.includes('林檎'))!]

    it('the recall ranking and the injection run hybrid: a kana query finds its kanji memory', async () => {
      const keyword = await runCjkBench({ distractors: 300, pairs: apple, workDir: scratch })
      expect(keyword.embedding_model).toBeUndefined()
      const embedding = benchEmbedding({ embeddingUrl: server.url, embeddingModel: 'reading', embeddingDimensions: '16' })
      const hybrid = await runCjkBench({ distractors: 300, pairs: apple, workDir: scratch, embedding })
      expect(hybrid).toMatchObject({ embedding_model: 'reading@16', hybrid_threshold: 0.85 })
      // Keywords alone never find it (no shared word) and inject distractors instead.
      expect(keyword.overall).toMatchObject({ recall: { '10': 0 }, injected: 0 })
      expect(keyword.overall.false_per_query).toBeGreaterThan(0)
      // By meaning it is among the first three (rank fusion puts memories both lists hold first),
      // and the automatic recall injects it, and only it (hybridThreshold holds the distractors back).
      expect(hybrid.overall).toMatchObject({ recall: { '3': 1, '10': 1 }, injected: 1, false_per_query: 0 })
      // The store's full-text search is the same either way.
      expect(hybrid.overall.store).toEqual(keyword.overall.store)
      // Every memory was embedded once, before the questions.
      expect(inputs.slice(0, 301)).toEqual(expect.arrayContaining([apple[0]!.memory]))
    })

    it('the command takes the embedder flags and names the model; --hybrid-threshold needs them', async () => {
      const result = await cli(['bench', 'cjk', '--distractors', '200', '--json', '--embedding-url', server.url, '--embedding-model', 'reading', '--embedding-dimensions', '16', '--hybrid-threshold', '0.9'])
      expect(result.code, result.stderr).toBe(0)
      expect(JSON.parse(result.stdout)).toMatchObject({ distractors: 200, embedding_model: 'reading@16', hybrid_threshold: 0.9 })
      expect(new Set(inputs)).toEqual(new Set([...cjkDistractors(200), ...PARAPHRASE_PAIRS.map((pair) => pair.memory), ...PARAPHRASE_PAIRS.map((pair) => pair.query), ...UNANSWERABLE_QUERIES]))
      const table = await cli(['bench', 'cjk', '--distractors', '200', '--embedding-url', server.url, '--embedding-model', 'reading', '--embedding-dimensions', '16'])
      expect(table.stdout).toMatch(/^CJK paraphrase set: \d+ pairs among 200 distractor memories \(hybrid with reading@16, hybrid threshold 0.85\)$/m)
      const refused = await cli(['bench', 'cjk', '--hybrid-threshold', '0.9'])
      expect(refused.code).toBe(2)
      expect(refused.stderr).toMatch(/--hybrid-threshold applies with --embedding-url/)
    })
  })
})
