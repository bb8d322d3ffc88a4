/**
 * The one client of dsh-memory for an OpenAI-compatible `POST {baseUrl}/embeddings` endpoint
 * (OpenAI, SiliconFlow, a local server). Recall, the cue bank and the CLI's `reembed` all use
 * it, so a vector means the same thing wherever it was made.
 *
 * Answers are untrusted input: shape, count, index, dimension and finiteness are checked
 * before a vector leaves this module. Every failure is an {@link EmbeddingError} with a stable
 * code; callers that want their own error type wrap it and keep it as `cause`.
 */

/**
 * Stable codes of {@link EmbeddingError}. Callers switch on `code`, never on the message.
 */
export type EmbeddingErrorCode =
  /** An option is missing or out of range; `path` names it. */
  | 'invalid-config'
  /** The request never got an HTTP answer (DNS, refused connection, reset). */
  | 'unreachable'
  /** No answer within `timeoutMs`. */
  | 'timeout'
  /** The caller's signal aborted the request. */
  | 'aborted'
  /** The endpoint answered with a non-2xx status; `status` holds it. */
  | 'http-error'
  /** The answer is not JSON, or not the expected `data[].embedding` shape, count or dimension. */
  | 'malformed-response'
  /** A previous failure put the client in its cool-down; no request was sent. */
  | 'cooling-down'

/** The error type of the embedding client. */
export class EmbeddingError extends Error {
  override readonly name = 'EmbeddingError'
  readonly code: EmbeddingErrorCode
  /** For `http-error`: the HTTP status. */
  readonly status: number | undefined
  /** For `invalid-config`: the option at fault. */
  readonly path: string | undefined

  constructor(code: EmbeddingErrorCode, message: string, options: { status?: number; path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status
    this.path = options.path
  }
}

/** True when `error` is an {@link EmbeddingError} (by shape, so duplicated package copies agree), optionally with `code`. */
export function isEmbeddingError(error: unknown, code?: EmbeddingErrorCode): error is EmbeddingError {
  if (!(error instanceof Error) || error.name !== 'EmbeddingError') return false
  const actual = (error as { code?: unknown }).code
  return typeof actual === 'string' && (code === undefined || actual === code)
}

/** Resolved options of {@link createEmbeddingClient} (see {@link resolveEmbeddingClientOptions}). */
export interface EmbeddingClientOptions {
  /** Base URL without a trailing slash; requests go to `${baseUrl}/embeddings`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer …` when non-empty (a local server may need none). */
  readonly apiKey: string
  readonly model: string
  /** Expected vector length; answers of another length are rejected. 0 accepts any consistent length. */
  readonly dimensions: number
  /** Send `dimensions` in the request (models with adjustable output size need it; some servers reject it). */
  readonly sendDimensions: boolean
  /** Abort one request after this many ms. */
  readonly timeoutMs: number
  /** Longer inputs are cut to this many characters before they leave the process; 0 = no cut. */
  readonly maxInputChars: number
  /** Most inputs per request; a larger `embed()` call is split into several requests. */
  readonly batchSize: number
  /** After a failure, calls fail fast with `cooling-down` for this many ms; 0 = never. */
  readonly cooldownMs: number
  /** The key stored next to each vector; vectors of different keys are never compared. */
  readonly modelKey: string
}

/** Input of {@link resolveEmbeddingClientOptions}: `baseUrl` and `model` are required, the rest has defaults. */
export type EmbeddingClientInput = Partial<EmbeddingClientOptions> & { readonly baseUrl: string; readonly model: string }

/** Defaults of the optional fields of {@link EmbeddingClientOptions}. */
export const DEFAULT_EMBEDDING_CLIENT_OPTIONS = Object.freeze({
  apiKey: '',
  dimensions: 0,
  timeoutMs: 10_000,
  maxInputChars: 0,
  batchSize: 64,
  cooldownMs: 0,
} as const)

/**
 * The key a vector of `model` with `dimensions` is stored under: `model@dimensions`, or just
 * `model` when the size is open (0). Recall stores L1 memory vectors under this key.
 */
export function embeddingModelKey(model: string, dimensions: number): string {
  return dimensions > 0 ? `${model}@${dimensions}` : model
}

/**
 * Fill defaults and check every field.
 * @returns a frozen options object; `sendDimensions` defaults to `dimensions > 0`, `modelKey`
 *   to {@link embeddingModelKey}.
 * @throws EmbeddingError `invalid-config` whose `path` names the field.
 */
export function resolveEmbeddingClientOptions(input: EmbeddingClientInput): Readonly<EmbeddingClientOptions> {
  const fail = (path: string, message: string): never => {
    throw new EmbeddingError('invalid-config', `invalid embedding option ${path}: ${message}`, { path })
  }
  const text = (value: unknown, path: string): string => (typeof value === 'string' ? value.trim() : fail(path, `must be a string, got ${typeof value}`))
  const natural = (value: unknown, path: string, min: number): number =>
    typeof value === 'number' && Number.isInteger(value) && value >= min ? value : fail(path, `must be an integer ≥ ${min}, got ${JSON.stringify(value)}`)
  const d = DEFAULT_EMBEDDING_CLIENT_OPTIONS
  const baseUrl = text(input.baseUrl, 'baseUrl').replace(/\/+$/, '')
  if (!baseUrl) fail('baseUrl', 'is required')
  try {
    const url = new URL(baseUrl)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http')
  } catch {
    fail('baseUrl', `must be an http(s) URL, got ${JSON.stringify(baseUrl)}`)
  }
  const model = text(input.model, 'model')
  if (!model) fail('model', 'is required')
  const dimensions = natural(input.dimensions ?? d.dimensions, 'dimensions', 0)
  const sendDimensions = input.sendDimensions ?? dimensions > 0
  if (typeof sendDimensions !== 'boolean') fail('sendDimensions', 'must be a boolean')
  if (sendDimensions && dimensions === 0) fail('sendDimensions', 'needs dimensions > 0')
  const modelKey = input.modelKey === undefined ? embeddingModelKey(model, dimensions) : text(input.modelKey, 'modelKey')
  if (!modelKey) fail('modelKey', 'must not be empty')
  return Object.freeze({
    baseUrl,
    apiKey: text(input.apiKey ?? d.apiKey, 'apiKey'),
    model,
    dimensions,
    sendDimensions,
    timeoutMs: natural(input.timeoutMs ?? d.timeoutMs, 'timeoutMs', 1),
    maxInputChars: natural(input.maxInputChars ?? d.maxInputChars, 'maxInputChars', 0),
    batchSize: natural(input.batchSize ?? d.batchSize, 'batchSize', 1),
    cooldownMs: natural(input.cooldownMs ?? d.cooldownMs, 'cooldownMs', 0),
    modelKey,
  })
}

/** Embeds texts through an OpenAI-compatible endpoint. */
export interface EmbeddingClient {
  /** The resolved options. */
  readonly options: Readonly<EmbeddingClientOptions>
  /** The key stored next to each vector (`options.modelKey`). */
  readonly modelKey: string
  /** The endpoint requests go to (`${baseUrl}/embeddings`). */
  readonly endpoint: string
  /** False while cooling down after a failure. */
  readonly available: boolean
  /**
   * One vector per text, in input order; `batchSize` inputs per request, requests in sequence.
   * @throws EmbeddingError (never anything else)
   */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>
}

/** Seams of {@link createEmbeddingClient} for tests: another fetch, a fake clock for the cool-down. */
export interface EmbeddingClientDependencies {
  readonly fetch?: typeof fetch
  readonly now?: () => number
}

/**
 * Create a client. `options` may be resolved already or raw input (it is resolved here).
 * @throws EmbeddingError `invalid-config`
 */
export function createEmbeddingClient(options: EmbeddingClientInput, dependencies: EmbeddingClientDependencies = {}): EmbeddingClient {
  const resolved = resolveEmbeddingClientOptions(options)
  const endpoint = `${resolved.baseUrl}/embeddings`
  const doFetch = dependencies.fetch ?? fetch
  const now = dependencies.now ?? Date.now
  let coolUntil = 0

  const failed = (error: EmbeddingError): EmbeddingError => {
    // The caller's own abort says nothing about the endpoint's health.
    if (resolved.cooldownMs > 0 && error.code !== 'aborted') coolUntil = now() + resolved.cooldownMs
    return error
  }

  const request = async (texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> => {
    const input = resolved.maxInputChars > 0 ? texts.map((text) => (text.length > resolved.maxInputChars ? text.slice(0, resolved.maxInputChars) : text)) : [...texts]
    const timeout = AbortSignal.timeout(resolved.timeoutMs)
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout
    const interrupted = (cause: unknown): EmbeddingError | undefined => {
      if (signal?.aborted) return new EmbeddingError('aborted', `embedding request to ${endpoint} was aborted`, { cause })
      if (timeout.aborted) return new EmbeddingError('timeout', `embedding request to ${endpoint} failed: no answer within ${resolved.timeoutMs} ms`, { cause })
      return undefined
    }
    let response: Response
    try {
      response = await doFetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(resolved.apiKey ? { authorization: `Bearer ${resolved.apiKey}` } : {}) },
        body: JSON.stringify({ model: resolved.model, input, ...(resolved.sendDimensions ? { dimensions: resolved.dimensions } : {}), encoding_format: 'float' }),
        signal: combined,
      })
    } catch (cause) {
      throw interrupted(cause) ?? new EmbeddingError('unreachable', `embedding request to ${endpoint} failed: ${describeCause(cause)}`, { cause })
    }
    let body: unknown
    try {
      if (!response.ok) {
        const detail = (await response.text().catch(() => '')).slice(0, 200)
        throw new EmbeddingError('http-error', `embedding request to ${endpoint} failed: HTTP ${response.status}${detail ? `: ${detail}` : ''}`, { status: response.status })
      }
      body = await response.json()
    } catch (cause) {
      if (isEmbeddingError(cause)) throw cause
      throw interrupted(cause) ?? new EmbeddingError('malformed-response', `embedding request to ${endpoint} failed: the answer is not JSON`, { cause })
    }
    return parseEmbeddings(body, input.length, resolved.dimensions, endpoint)
  }

  return {
    options: resolved,
    modelKey: resolved.modelKey,
    endpoint,
    get available() {
      return now() >= coolUntil
    },
    async embed(texts, signal) {
      if (texts.length === 0) return []
      if (now() < coolUntil) throw new EmbeddingError('cooling-down', `embedding endpoint ${endpoint} is cooling down after a failure`)
      const vectors: Float32Array[] = []
      for (let start = 0; start < texts.length; start += resolved.batchSize) {
        try {
          vectors.push(...(await request(texts.slice(start, start + resolved.batchSize), signal)))
        } catch (error) {
          throw failed(isEmbeddingError(error) ? error : new EmbeddingError('malformed-response', `embedding request to ${endpoint} failed: ${describeCause(error)}`, { cause: error }))
        }
      }
      if (vectors.some((vector) => vector.length !== vectors[0]!.length)) {
        throw failed(new EmbeddingError('malformed-response', `embedding request to ${endpoint} failed: the answers' vectors differ in length`))
      }
      return vectors
    },
  }
}

/** Validate `{ data: [{ index?, embedding: number[] }] }` and order the vectors by `index`. */
function parseEmbeddings(body: unknown, count: number, dimensions: number, endpoint: string): Float32Array[] {
  const malformed = (message: string) => new EmbeddingError('malformed-response', `embedding request to ${endpoint} failed: unexpected shape: ${message}`)
  const data = (body as { data?: unknown } | null)?.data
  if (!Array.isArray(data)) throw malformed(`expected data[] with ${count} embeddings`)
  if (data.length !== count) throw malformed(`expected data[] with ${count} embeddings, got ${data.length}`)
  const vectors: Float32Array[] = new Array(count)
  data.forEach((entry: unknown, position) => {
    const rawIndex = (entry as { index?: unknown } | null)?.index
    const index = typeof rawIndex === 'number' ? rawIndex : position
    const values = (entry as { embedding?: unknown } | null)?.embedding
    if (!Number.isInteger(index) || index < 0 || index >= count || vectors[index]) throw malformed(`bad index ${String(index)} in data[${position}]`)
    if (!Array.isArray(values) || values.length === 0 || !values.every((value) => typeof value === 'number' && Number.isFinite(value))) {
      throw malformed(`data[${position}].embedding is not an array of finite numbers`)
    }
    if (dimensions > 0 && values.length !== dimensions) {
      throw new EmbeddingError('malformed-response', `embedding request to ${endpoint} failed: data[${position}].embedding has ${values.length} dimensions, expected ${dimensions}`)
    }
    vectors[index] = Float32Array.from(values as number[])
  })
  if (vectors.some((vector) => vector.length !== vectors[0]!.length)) throw malformed('embeddings of one answer differ in length')
  return vectors
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause)
  // fetch reports "fetch failed" and hides the reason (ECONNREFUSED, ENOTFOUND) in `cause`.
  const inner = (cause as { cause?: unknown }).cause
  if (inner instanceof Error && inner.message && inner.message !== cause.message) return `${cause.message} (${inner.message})`
  return cause.message
}

/** Cosine similarity in [-1, 1]; 0 when either vector is zero, empty, or the sizes differ. */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length || a.length === 0) return 0
  let dot = 0
  let normA = 0
  let normB = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    dot += x * y
    normA += x * x
    normB += y * y
  }
  return normA > 0 && normB > 0 ? dot / Math.sqrt(normA * normB) : 0
}
