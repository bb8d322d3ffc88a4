import { getRandomValues } from 'node:crypto'

/**
 * A new UUIDv7 (RFC 9562): 48 bits of epoch-ms time, then randomness. Chosen over
 * `randomUUID()` (v4) because ids then sort by creation time, which keeps SQLite's primary
 * key b-trees append-mostly and makes "newest first" cheap without another index.
 * @param now - the creation time in epoch ms (the store passes its clock).
 */
export function newId(now: number = Date.now()): string {
  const bytes = new Uint8Array(16)
  getRandomValues(bytes)
  const ms = Math.max(0, Math.floor(now))
  // 48-bit big-endian timestamp; split because bitwise ops are 32-bit in JS.
  const high = Math.floor(ms / 2 ** 16)
  bytes[0] = (high >>> 24) & 0xff
  bytes[1] = (high >>> 16) & 0xff
  bytes[2] = (high >>> 8) & 0xff
  bytes[3] = high & 0xff
  bytes[4] = (ms >>> 8) & 0xff
  bytes[5] = ms & 0xff
  bytes[6] = (bytes[6]! & 0x0f) | 0x70
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
