/**
 * `memory.log`: one line per pipeline stage (capture, distillation batches, recall hits and
 * misses) with counts and timings, beside `memory.db`, so "what did memory do on that turn?"
 * is answerable without a debugger. It never holds conversation or memory text: values are
 * numbers, booleans and short codes (ids, stage names); any string with whitespace or longer
 * than {@link MAX_CODE_CHARS} is written as its length only. Rotation keeps it bounded.
 *
 * Pure Node (no host imports): the store plugin owns the data dir and builds one per host.
 */
import { appendFileSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname } from 'node:path'

/** A value a log line may carry. Strings are codes: whitespace or length over 80 turns them into `<n chars>`. */
export type ActivityValue = number | boolean | string | null | undefined

/** The longest string value written as is. */
export const MAX_CODE_CHARS = 80

/** Options of {@link ActivityLog}. */
export interface ActivityLogOptions {
  /** The log file (`<dataDir>/memory.log`). */
  readonly path: string
  /** Rotate when the file reaches this many bytes; `0` turns the log off. */
  readonly maxBytes: number
  /** Rotated files kept beside the live one (`memory.log.1` … `memory.log.<files>`). */
  readonly files: number
  /** Clock (tests). */
  readonly now?: () => number
  /** Called once when the log cannot be written (a full disk must not fail a turn). */
  readonly onError?: (error: unknown) => void
}

/** One log line: `<ISO time> <stage> <event> key=value …`, values sanitised (see the module note). */
export function formatActivityLine(at: number, stage: string, event: string, fields: Readonly<Record<string, ActivityValue>> = {}): string {
  const parts = [new Date(at).toISOString(), code(stage), code(event)]
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue
    parts.push(`${code(key)}=${formatValue(value)}`)
  }
  return `${parts.join(' ')}\n`
}

function formatValue(value: ActivityValue): string {
  if (value === null) return '-'
  if (typeof value === 'number') return Number.isFinite(value) ? String(Math.round(value * 1000) / 1000) : '-'
  if (typeof value === 'boolean') return String(value)
  return code(value ?? '')
}

/** A string as a code, or only its length when it could be prose (whitespace, `=`, too long, control characters). */
function code(value: string): string {
  const text = String(value)
  if (text.length === 0) return '""'
  // eslint-disable-next-line no-control-regex
  if (text.length > MAX_CODE_CHARS || /[\s=\u0000-\u001f\u007f]/.test(text)) return `<${[...text].length}chars>`
  return text
}

/**
 * An append-only, size-rotated stage log shared by every plugin of one host (and safe to share
 * between processes on one data dir: each line is one `O_APPEND` write; a rotation racing
 * another process may move a few lines one file early, never lose or tear them).
 */
export class ActivityLog {
  readonly path: string
  readonly #maxBytes: number
  readonly #files: number
  readonly #now: () => number
  readonly #onError: (error: unknown) => void
  #size = -1
  #failed = false

  constructor(options: ActivityLogOptions) {
    this.path = options.path
    this.#maxBytes = options.maxBytes
    this.#files = Math.max(0, Math.floor(options.files))
    this.#now = options.now ?? Date.now
    this.#onError = options.onError ?? (() => {})
  }

  /** Whether lines are written at all (`maxBytes > 0`). */
  get enabled(): boolean {
    return this.#maxBytes > 0
  }

  /** Append one line. Never throws: a write failure is reported once through `onError`. */
  write(stage: string, event: string, fields?: Readonly<Record<string, ActivityValue>>): void {
    if (!this.enabled) return
    const line = formatActivityLine(this.#now(), stage, event, fields)
    try {
      if (this.#size < 0) this.#size = sizeOf(this.path, true)
      const bytes = Buffer.byteLength(line)
      if (this.#size > 0 && this.#size + bytes > this.#maxBytes) {
        // Another process may have rotated already: trust the file, not the cached size.
        this.#size = sizeOf(this.path, false)
        if (this.#size > 0 && this.#size + bytes > this.#maxBytes) this.#rotate()
      }
      appendFileSync(this.path, line)
      this.#size += bytes
      this.#failed = false
    } catch (error) {
      this.#size = -1
      if (!this.#failed) this.#onError(error)
      this.#failed = true
    }
  }

  #rotate(): void {
    if (this.#files === 0) rmSync(this.path, { force: true })
    else {
      rmSync(`${this.path}.${this.#files}`, { force: true })
      for (let index = this.#files - 1; index >= 1; index--) renameQuietly(`${this.path}.${index}`, `${this.path}.${index + 1}`)
      renameQuietly(this.path, `${this.path}.1`)
    }
    this.#size = 0
  }
}

function sizeOf(path: string, createDir: boolean): number {
  try {
    return statSync(path).size
  } catch {
    if (createDir) mkdirSync(dirname(path), { recursive: true })
    return 0
  }
}

function renameQuietly(from: string, to: string): void {
  try {
    renameSync(from, to)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
