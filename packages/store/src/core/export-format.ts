/**
 * The versioned JSONL export format. Line 1 is a header naming the format and version;
 * every other line is one record `{ "type": …, "data": … }`. Embeddings travel as base64
 * of little-endian float32, so a line stays plain JSON.
 */
import { MemoryStoreError } from './errors.ts'
import type { Conversation, Message } from './types-conversations.ts'
import type { Memory } from './types-memories.ts'
import type { Persona } from './types-persona.ts'
import type { Scene } from './types-scenes.ts'

/** The `format` of the header line. */
export const EXPORT_FORMAT = 'dsh-memory-export'
/** The only version this code writes and reads. */
export const EXPORT_VERSION = 1

/** The first line of an export. */
export interface ExportHeader {
  type: 'header'
  format: typeof EXPORT_FORMAT
  version: number
  exportedAt: number
  /** The `store` schema version of the exporting database (informational). */
  schema: number
}

/** One line of an export. */
export type ExportRecord =
  | ExportHeader
  | { type: 'conversation'; data: Conversation }
  | { type: 'message'; data: Message }
  | { type: 'memory'; data: Memory }
  | { type: 'scene'; data: Scene }
  | { type: 'persona'; data: Persona }

const RECORD_TYPES = new Set(['conversation', 'message', 'memory', 'scene', 'persona'])

/** Serialise one record as a single JSON line (no newline). */
export function encodeExportRecord(record: ExportRecord): string {
  if (record.type === 'memory' && record.data.embedding) {
    const embedding = record.data.embedding
    const base64 = Buffer.from(embedding.buffer, embedding.byteOffset, embedding.byteLength).toString('base64')
    return JSON.stringify({ type: 'memory', data: { ...record.data, embedding: { float32: base64, dims: embedding.length } } })
  }
  return JSON.stringify(record)
}

/**
 * Parse one line of an import stream.
 * @param sawHeader - whether a header was already accepted (the first record must be one).
 * @throws MemoryStoreError `unsupported-format` for a foreign or newer stream, `invalid-argument` for a malformed line.
 */
export function parseImportLine(line: string, lineNumber: number, sawHeader: boolean): ExportRecord {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    if (!sawHeader) throw new MemoryStoreError('unsupported-format', `line ${lineNumber}: not JSON; expected a ${EXPORT_FORMAT} header`)
    throw new MemoryStoreError('invalid-argument', `line ${lineNumber}: not valid JSON`)
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new MemoryStoreError(sawHeader ? 'invalid-argument' : 'unsupported-format', `line ${lineNumber}: expected a JSON object`)
  }
  const record = value as { type?: unknown; format?: unknown; version?: unknown; data?: unknown }
  if (!sawHeader) {
    if (record.type !== 'header' || record.format !== EXPORT_FORMAT) {
      throw new MemoryStoreError('unsupported-format', `line ${lineNumber}: expected a ${EXPORT_FORMAT} header line first`)
    }
    if (record.version !== EXPORT_VERSION) {
      throw new MemoryStoreError(
        'unsupported-format',
        `${EXPORT_FORMAT} version ${JSON.stringify(record.version)} is not supported (this store reads version ${EXPORT_VERSION})`,
      )
    }
    return value as ExportHeader
  }
  if (record.type === 'header') throw new MemoryStoreError('invalid-argument', `line ${lineNumber}: a second header line`)
  if (typeof record.type !== 'string' || !RECORD_TYPES.has(record.type)) {
    throw new MemoryStoreError('unsupported-format', `line ${lineNumber}: unknown record type ${JSON.stringify(record.type)}`)
  }
  if (!record.data || typeof record.data !== 'object' || Array.isArray(record.data)) {
    throw new MemoryStoreError('invalid-argument', `line ${lineNumber}: record has no data object`)
  }
  if (record.type === 'memory') {
    const data = record.data as Record<string, unknown>
    return { type: 'memory', data: { ...data, embedding: decodeEmbedding(data.embedding, lineNumber) } as unknown as Memory }
  }
  return value as ExportRecord
}

function decodeEmbedding(value: unknown, lineNumber: number): Float32Array | null {
  if (value === null || value === undefined) return null
  const encoded = value as { float32?: unknown; dims?: unknown }
  if (typeof encoded.float32 !== 'string' || typeof encoded.dims !== 'number') {
    throw new MemoryStoreError('invalid-argument', `line ${lineNumber}: embedding must be { float32: base64, dims }`)
  }
  const bytes = Buffer.from(encoded.float32, 'base64')
  if (bytes.byteLength !== encoded.dims * 4) {
    throw new MemoryStoreError('invalid-argument', `line ${lineNumber}: embedding has ${bytes.byteLength} bytes for ${encoded.dims} dimensions`)
  }
  const copy = new Uint8Array(bytes.byteLength)
  copy.set(bytes)
  return new Float32Array(copy.buffer)
}
