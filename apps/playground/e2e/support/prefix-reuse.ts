import type { LoggedRequest } from '../../src/model-server.js'

/** One chat request of a session and how much of it a prompt cache could reuse from the one before. */
export interface PrefixRow {
  /** UTF-8 bytes of the request's message list as the host serialised it. */
  readonly bytes: number
  /** Leading bytes identical to the previous request's message list (0 for the first). */
  readonly shared: number
  /** Bytes of the previous request (0 for the first): `shared === previous` means append-only. */
  readonly previous: number
}

/**
 * Byte prefix reuse over a session's chat requests. Provider prompt caches match on the
 * leading tokens of a request; the serialised message list (system prompt first) is a
 * byte-level stand-in for them: a byte that differs ends the reusable prefix for everything
 * after it.
 */
export function prefixReuse(requests: readonly LoggedRequest[]): PrefixRow[] {
  let previous: Buffer | undefined
  return requests.map((request) => {
    const current = Buffer.from(JSON.stringify(request.body.messages), 'utf8')
    let shared = 0
    if (previous) {
      const limit = Math.min(previous.length, current.length)
      while (shared < limit && previous[shared] === current[shared]) shared++
    }
    const row = { bytes: current.length, shared, previous: previous?.length ?? 0 }
    previous = current
    return row
  })
}

/** Totals of {@link prefixReuse}: bytes sent after the first request and how many were a reused prefix. */
export function prefixTotals(rows: readonly PrefixRow[]): { sent: number; reused: number; appendOnlySteps: number } {
  const later = rows.slice(1)
  return {
    sent: later.reduce((sum, row) => sum + row.bytes, 0),
    reused: later.reduce((sum, row) => sum + row.shared, 0),
    // The JSON array's closing bracket always differs; a step is append-only when all else matched.
    appendOnlySteps: later.filter((row) => row.shared >= row.previous - 1).length,
  }
}
