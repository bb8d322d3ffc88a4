/**
 * Argument checks shared by every write path. They fail with `invalid-argument` and a
 * message naming the field, because most callers are other plugins whose bugs should be
 * obvious from the log line alone.
 */
import { MemoryStoreError } from './errors.ts'
import type { Flags, MessageRole, Scope } from './types-common.ts'

const MAX_ID_LENGTH = 512
const MAX_FLAGS_BYTES = 64 * 1024
const MAX_LIST_ITEMS = 10_000
const MAX_EMBEDDING_DIMS = 16_384
const ID_FORBIDDEN = /[\u0000-\u001f\u007f]/

function fail(message: string): never {
  throw new MemoryStoreError('invalid-argument', message)
}

/** A caller-chosen identifier (host session id, host message id, memory id…): kept verbatim. */
export function requireId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) fail(`${field} must be a non-empty string`)
  if (value.length > MAX_ID_LENGTH) fail(`${field} must be at most ${MAX_ID_LENGTH} characters`)
  if (ID_FORBIDDEN.test(value)) fail(`${field} must not contain control characters`)
  return value
}

/** The arguments of an `update(id, patch)` call: a valid id and a patch object. */
export function requireUpdate(id: unknown, patch: unknown): void {
  requireId(id, 'id')
  if (!patch || typeof patch !== 'object') fail('patch must be an object')
}

/** An epoch-ms time (finite, non-negative); rounded to an integer. */
export function requireTime(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) fail(`${field} must be a non-negative epoch-ms number`)
  return Math.round(value)
}

/** `value` or `fallback` when undefined, checked by {@link requireTime}. */
export function optionalTime(value: unknown, field: string, fallback: number): number {
  return value === undefined ? fallback : requireTime(value, field)
}

/** A non-negative safe integer. */
export function requireCount(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(`${field} must be a non-negative integer`)
  return value
}

/** A finite number. */
export function requireFinite(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${field} must be a finite number`)
  return value
}

/** `'user'` or `'assistant'`. */
export function requireRole(value: unknown, field = 'role'): MessageRole {
  if (value !== 'user' && value !== 'assistant') fail(`${field} must be 'user' or 'assistant', got ${JSON.stringify(value)}`)
  return value
}

/** `'global'`, `'workspace'` or `'session'`. */
export function requireScope(value: unknown, field = 'scope'): Scope {
  if (value !== 'global' && value !== 'workspace' && value !== 'session') {
    fail(`${field} must be 'global', 'workspace' or 'session', got ${JSON.stringify(value)}`)
  }
  return value
}

/** An array of ids (each checked by {@link requireId}); `undefined` becomes `[]`. */
export function idList(value: unknown, field: string): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) fail(`${field} must be an array of strings`)
  if (value.length > MAX_LIST_ITEMS) fail(`${field} must hold at most ${MAX_LIST_ITEMS} items`)
  return value.map((item, i) => requireId(item, `${field}[${i}]`))
}

/** A plain JSON object of at most 64 KiB; `undefined` becomes `{}`. Returned as a deep copy. */
export function flagsObject(value: unknown, field = 'flags'): Flags {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(`${field} must be a plain object`)
  let json: string
  try {
    json = JSON.stringify(value)
  } catch {
    fail(`${field} must be JSON-serialisable`)
  }
  if (json.length > MAX_FLAGS_BYTES) fail(`${field} must serialise to at most ${MAX_FLAGS_BYTES} characters`)
  return JSON.parse(json) as Flags
}

/** A non-empty Float32Array of at most 16 384 dimensions, `null`, or `undefined`. */
export function embeddingValue(value: unknown, field = 'embedding'): Float32Array | null | undefined {
  if (value === undefined || value === null) return value
  if (!(value instanceof Float32Array)) fail(`${field} must be a Float32Array or null`)
  if (value.length === 0 || value.length > MAX_EMBEDDING_DIMS) fail(`${field} must have 1..${MAX_EMBEDDING_DIMS} dimensions`)
  for (const x of value) if (!Number.isFinite(x)) fail(`${field} must hold finite numbers`)
  return value
}

/** Paging of every list method of every backend: default and largest page. */
export const DEFAULT_PAGE = 100
export const MAX_PAGE = 10_000

/** A page size: `fallback` when undefined, otherwise an integer in 1..max. */
export function pageSize(value: unknown, fallback: number, max: number, field = 'limit'): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) fail(`${field} must be an integer in 1..${max}`)
  return value
}

/** Float32Array → bytes for a BLOB column (a copy, so later mutation of the array is harmless). */
export function embeddingToBuffer(embedding: Float32Array): Buffer {
  return Buffer.from(new Uint8Array(embedding.buffer, embedding.byteOffset, embedding.byteLength).slice())
}

/** BLOB bytes → Float32Array (a copy: the BLOB buffer need not be 4-byte aligned). */
export function bufferToEmbedding(buffer: Uint8Array): Float32Array {
  const copy = new Uint8Array(buffer.byteLength)
  copy.set(buffer)
  return new Float32Array(copy.buffer, 0, Math.floor(copy.byteLength / 4))
}
