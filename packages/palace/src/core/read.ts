/**
 * `palace_read`: the verbatim text of archived turns, by turn range or by path, in pages of
 * at most 60 000 characters continued with `offset`, followed by one line of back-links
 * (turn references, file names and tool names found in the text; extracted automatically,
 * for orientation only).
 */
import { PalaceError } from './errors.js'
import type { IndexEntry, NamespaceArchive } from './namespace.js'
import { formatRanges } from './ranges.js'

/** Default and hard cap of one read, in characters. */
export const READ_CAP = 60_000

/** A read request (already shape-checked by the tool schema). */
export interface ReadRequest {
  readonly fromTurn?: number
  readonly toTurn?: number
  /** A volume path: `<YYYY-MM>/<category>/<file>.md`, optionally prefixed by `<folder>/` and suffixed by `:<line>` (as search prints it). */
  readonly path?: string
  readonly offset?: number
  readonly maxChars?: number
}

/** One page of a read. */
export interface ReadResult {
  readonly text: string
  /** Total characters of the whole read (all pages). */
  readonly totalChars: number
  readonly offset: number
  /** Where the next page starts, when there is one. */
  readonly nextOffset: number | undefined
  /** Turns included in the read. */
  readonly turns: readonly number[]
}

/**
 * Read from one namespace.
 * @throws PalaceError `invalid-argument`, `not-found`, `path-refused`
 */
export async function readArchive(archive: NamespaceArchive, request: ReadRequest): Promise<ReadResult> {
  const cap = Math.min(READ_CAP, request.maxChars ?? READ_CAP)
  if (!Number.isInteger(cap) || cap < 1) throw new PalaceError('invalid-argument', `maxChars must be an integer between 1 and ${READ_CAP}`)
  const offset = request.offset ?? 0
  if (!Number.isInteger(offset) || offset < 0) throw new PalaceError('invalid-argument', 'offset must be a non-negative integer')
  const entries = await archive.entries()
  let from = request.fromTurn ?? request.toTurn
  let to = request.toTurn ?? request.fromTurn
  if (from !== undefined && to !== undefined && from > to) throw new PalaceError('invalid-argument', `fromTurn ${from} is after toTurn ${to}`)
  let path: string | undefined
  let line: number | undefined
  if (request.path !== undefined) {
    ;({ path, line } = parseReadPath(request.path, archive.namespace))
    archive.resolve(path) // refuses traversal before anything is read
  }
  let selected: IndexEntry[]
  let full: string
  if (path !== undefined && from === undefined && line === undefined) {
    // A whole file: a volume, or a month summary.
    full = await archive.readFile(path)
    selected = entries.filter((entry) => entry.path === path)
  } else {
    if (path !== undefined && line !== undefined && from === undefined) {
      const at = line
      const hit = entries.find((entry) => entry.path === path && at >= entry.line && at < entry.line + entry.lines)
      if (!hit) throw new PalaceError('not-found', `no archived turn at ${path}:${at}`)
      from = to = hit.turn
    }
    if (from === undefined || to === undefined) throw new PalaceError('invalid-argument', 'give fromTurn/toTurn, a path, or both')
    const lo = from
    const hi = to
    selected = entries.filter((entry) => entry.turn >= lo && entry.turn <= hi && (path === undefined || entry.path === path))
    if (selected.length === 0) {
      const state = await archive.ranges()
      throw new PalaceError(
        'not-found',
        `turns ${lo === hi ? lo : `${lo}–${hi}`} are not archived in memory "${archive.namespace}"${path ? ` (in ${path})` : ''}; archived turns: ${formatRanges(state)}`,
      )
    }
    const parts: string[] = []
    for (const entry of selected) {
      parts.push(`<!-- ${archive.namespace}/${entry.path}:${entry.line} · ${entry.category} -->\n${await archive.turnText(entry)}`)
    }
    full = parts.join('\n')
  }
  const chars = [...full]
  if (offset > chars.length) throw new PalaceError('invalid-argument', `offset ${offset} is past the end (${chars.length} characters)`)
  const page = chars.slice(offset, offset + cap).join('')
  const end = offset + [...page].length
  const nextOffset = end < chars.length ? end : undefined
  let text = page
  if (nextOffset !== undefined) {
    text += `\n\n… ${chars.length - end} more characters (of ${chars.length}). Continue with palace_read(${describeRequest(request)}, offset=${nextOffset}).`
  }
  // The read's own location headers are not references.
  const links = backLinks(page.replace(/^<!-- .* -->$/gm, ''), new Set(selected.map((entry) => entry.turn)))
  if (links) text += `\n\n${links}`
  return { text, totalChars: chars.length, offset, nextOffset, turns: selected.map((entry) => entry.turn) }
}

/** Split `[<folder>/]<month>/<category>/<file>[:<line>]` into a namespace-relative path and line. */
export function parseReadPath(raw: string, namespace: string): { path: string; line: number | undefined } {
  let path = raw.trim().replace(/\\/g, '/')
  let line: number | undefined
  const match = /^(.*\.md):(\d+)$/.exec(path)
  if (match) {
    path = match[1]!
    line = Number(match[2])
  }
  if (path.startsWith(`${namespace}/`)) path = path.slice(namespace.length + 1)
  return { path, line }
}

function describeRequest(request: ReadRequest): string {
  const parts: string[] = []
  if (request.fromTurn !== undefined) parts.push(`fromTurn=${request.fromTurn}`)
  if (request.toTurn !== undefined) parts.push(`toTurn=${request.toTurn}`)
  if (request.path !== undefined) parts.push(`path=${JSON.stringify(request.path)}`)
  return parts.join(', ')
}

const TURN_REFS = [/\bturns?\s*#?\s*(\d{1,7})/gi, /第\s*(\d{1,7})\s*[轮輪]/g, /\bT(\d{1,7})\b/g]
const FILE_REF = /(?:^|[\s`'"(])((?:[\w.-]+\/)*[\w.-]+\.(?:ts|tsx|js|jsx|mjs|cjs|json|md|py|rs|go|java|kt|c|cc|cpp|h|hpp|yml|yaml|toml|sql|sh|css|html|vue|svelte))\b/g
const TOOL_REF = /^### Tool call · ([\w.:-]+)/gm

/**
 * One line of references found in `text`: turn numbers, file names and tool names.
 * Extraction is heuristic, so the line says so.
 */
export function backLinks(text: string, exclude: ReadonlySet<number> = new Set()): string | undefined {
  const turns = new Set<number>()
  for (const pattern of TURN_REFS) {
    for (const match of text.matchAll(pattern)) if (!exclude.has(Number(match[1]))) turns.add(Number(match[1]))
  }
  const files = new Set<string>()
  for (const match of text.matchAll(FILE_REF)) if (!match[1]!.startsWith('.')) files.add(match[1]!)
  const tools = new Set<string>()
  for (const match of text.matchAll(TOOL_REF)) tools.add(match[1]!)
  const parts: string[] = []
  if (turns.size > 0) parts.push(`turns ${[...turns].sort((a, b) => a - b).slice(0, 20).join(', ')}`)
  if (files.size > 0) parts.push(`files ${[...files].slice(0, 12).join(', ')}`)
  if (tools.size > 0) parts.push(`tools ${[...tools].slice(0, 12).join(', ')}`)
  return parts.length > 0 ? `Back-links (auto-extracted, for reference only): ${parts.join(' · ')}` : undefined
}
