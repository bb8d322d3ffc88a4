/**
 * `palace_search`: AND keywords and phrases over archived turns (never over `_summary.md`,
 * except as a labelled fallback), grouped by turn by default, with ~220-character snippets
 * and an 8 000-character output cap.
 */
import { describeError } from './errors.js'
import type { IndexEntry, NamespaceArchive } from './namespace.js'
import { MatchText, normalize, snippet, type Keyword, type ParsedQuery } from './query.js'

/** Hard cap of the rendered search output, as in the reference. */
export const SEARCH_OUTPUT_CAP = 8000
/** Snippet width in characters. */
export const SNIPPET_WIDTH = 220

/** One namespace to search. */
export interface SearchSource {
  readonly namespace: string
  readonly archive: NamespaceArchive
}

/** Options of {@link searchArchives}. */
export interface SearchOptions {
  readonly category?: string
  /** Group hits by turn (default) or return raw hit lines. */
  readonly groupByTurn: boolean
  /** Turns returned when grouping. */
  readonly limitTurns: number
  /** Hit lines returned when not grouping. */
  readonly limit: number
  /** Append summary paragraphs that match, even when turns matched. */
  readonly includeSummary: boolean
  /** Label each result with its namespace (set for `all: true`). */
  readonly labelSource: boolean
  /**
   * Turns (per namespace) that can match, from the store index; undefined scans the whole
   * archive. Must be a superset of the matching turns.
   */
  readonly candidates?: ReadonlyMap<string, ReadonlySet<number>>
  readonly outputCap?: number
}

/** One matching line. */
export interface SearchHit {
  readonly namespace: string
  readonly turn: number
  readonly speaker: string
  readonly category: string
  /** Volume path relative to the palace root: `<folder>/<YYYY-MM>/<category>/<file>.md`. */
  readonly path: string
  /** 1-based line in the volume. */
  readonly line: number
  /** How many of the query's keywords the line holds. */
  readonly keywords: number
  readonly snippet: string
}

/** All hits of one turn, with the representative one. */
export interface TurnGroup {
  readonly namespace: string
  readonly turn: number
  readonly speaker: string
  readonly category: string
  readonly at: number
  readonly hits: number
  readonly best: SearchHit
}

/** A summary paragraph that matched (only as a fallback or with `includeSummary`). */
export interface SummaryHit {
  readonly namespace: string
  readonly month: string
  readonly category: string
  readonly fromTurn: number
  readonly toTurn: number
  readonly snippet: string
}

/** Everything a search found, plus its rendering. */
export interface SearchResult {
  readonly groups: readonly TurnGroup[]
  readonly hits: readonly SearchHit[]
  readonly matchedTurns: number
  readonly totalHits: number
  readonly summaryHits: readonly SummaryHit[]
  /** Files that could not be read (skipped, named in the output). */
  readonly skipped: readonly string[]
  /** Whether the rendering was cut at the output cap. */
  readonly truncated: boolean
  readonly text: string
}

/**
 * Search the given namespaces.
 * @param query - must have at least one keyword (the tool checks).
 */
export async function searchArchives(query: ParsedQuery, sources: readonly SearchSource[], options: SearchOptions): Promise<SearchResult> {
  const keywords = query.keywords
  const groups: TurnGroup[] = []
  const hits: SearchHit[] = []
  const skipped = new Set<string>()
  for (const source of sources) {
    let entries: IndexEntry[]
    try {
      entries = await source.archive.entries()
    } catch (error) {
      skipped.add(`${source.namespace}/index.jsonl (${describeError(error)})`)
      continue
    }
    const allowed = options.candidates?.get(source.namespace)
    for (const entry of entries) {
      if (options.category !== undefined && entry.category !== options.category) continue
      if (options.candidates && !allowed?.has(entry.turn)) continue
      const path = `${source.namespace}/${entry.path}`
      if ([...skipped].some((item) => item.startsWith(`${path} `))) continue
      let text: string
      try {
        text = await source.archive.turnText(entry)
      } catch (error) {
        skipped.add(`${path} (${describeError(error)})`)
        continue
      }
      const whole = new MatchText(text)
      if (!keywords.every((keyword) => whole.has(keyword))) continue
      const turnHits = lineHits(text, keywords, entry, source.namespace, path)
      hits.push(...turnHits)
      const best = turnHits.reduce<SearchHit | undefined>((top, hit) => (top === undefined || hit.keywords > top.keywords ? hit : top), undefined)!
      groups.push({
        namespace: source.namespace,
        turn: entry.turn,
        speaker: entry.speaker,
        category: entry.category,
        at: entry.archivedAt,
        hits: turnHits.filter((hit) => hit.keywords > 0).length || 1,
        best,
      })
    }
  }
  groups.sort((a, b) => b.best.keywords - a.best.keywords || b.hits - a.hits || b.at - a.at || b.turn - a.turn)
  const summaryHits = groups.length === 0 || options.includeSummary ? await searchSummaries(keywords, sources, options.category, skipped) : []
  const rendered = render(query, groups, hits, summaryHits, [...skipped], options)
  return {
    groups,
    hits,
    matchedTurns: groups.length,
    totalHits: hits.length,
    summaryHits,
    skipped: [...skipped],
    truncated: rendered.truncated,
    text: rendered.text,
  }
}

function lineHits(text: string, keywords: readonly Keyword[], entry: IndexEntry, namespace: string, path: string): SearchHit[] {
  const lines = text.split('\n')
  const out: SearchHit[] = []
  lines.forEach((line, index) => {
    if (line.trim().length === 0) return
    const match = new MatchText(line)
    const count = keywords.filter((keyword) => match.has(keyword)).length
    if (count === 0) return
    const at = position(line, keywords)
    out.push({
      namespace,
      turn: entry.turn,
      speaker: entry.speaker,
      category: entry.category,
      path,
      // The turn text starts at the heading, one line below the marker.
      line: entry.line + 1 + index,
      keywords: count,
      snippet: snippet(line, at, SNIPPET_WIDTH),
    })
  })
  if (out.length === 0) {
    // The keywords only meet across lines: point at the turn itself.
    const at = position(text, keywords)
    out.push({ namespace, turn: entry.turn, speaker: entry.speaker, category: entry.category, path, line: entry.line + 1, keywords: 0, snippet: snippet(text, at, SNIPPET_WIDTH) })
  }
  return out
}

/** Position of the first keyword occurrence in the whitespace-collapsed text (0 when none). */
function position(text: string, keywords: readonly Keyword[]): number {
  const flat = normalize(text).trim()
  let best = -1
  for (const keyword of keywords) {
    const candidates = keyword.norm.length > 0 ? [keyword.norm, ...keyword.terms] : keyword.terms
    for (const needle of candidates) {
      const at = flat.indexOf(needle)
      if (at !== -1 && (best === -1 || at < best)) best = at
      if (at !== -1) break
    }
  }
  return Math.max(0, best)
}

async function searchSummaries(keywords: readonly Keyword[], sources: readonly SearchSource[], category: string | undefined, skipped: Set<string>): Promise<SummaryHit[]> {
  const out: SummaryHit[] = []
  for (const source of sources) {
    let months
    try {
      months = await source.archive.months()
    } catch (error) {
      skipped.add(`${source.namespace} (${describeError(error)})`)
      continue
    }
    for (const { month } of months) {
      let paragraphs
      try {
        paragraphs = await source.archive.summaryParagraphs(month)
      } catch (error) {
        skipped.add(`${source.namespace}/${month}/_summary.md (${describeError(error)})`)
        continue
      }
      for (const paragraph of paragraphs) {
        if (category !== undefined && paragraph.category !== category) continue
        const match = new MatchText(paragraph.body)
        if (!keywords.every((keyword) => match.has(keyword))) continue
        out.push({
          namespace: source.namespace,
          month,
          category: paragraph.category,
          fromTurn: paragraph.fromTurn,
          toTurn: paragraph.toTurn,
          snippet: snippet(paragraph.body, position(paragraph.body, keywords), SNIPPET_WIDTH),
        })
      }
    }
  }
  return out
}

function render(
  query: ParsedQuery,
  groups: readonly TurnGroup[],
  hits: readonly SearchHit[],
  summaries: readonly SummaryHit[],
  skipped: readonly string[],
  options: SearchOptions,
): { text: string; truncated: boolean } {
  const cap = options.outputCap ?? SEARCH_OUTPUT_CAP
  const label = (namespace: string): string => (options.labelSource ? `[${namespace}] ` : '')
  const blocks: string[] = []
  let header: string
  if (options.groupByTurn) {
    const shown = groups.slice(0, options.limitTurns)
    const hitCount = groups.reduce((sum, group) => sum + group.hits, 0)
    header = `palace_search ${JSON.stringify(query.text)}: ${groups.length} matching turn${groups.length === 1 ? '' : 's'}, ${hitCount} hit line${hitCount === 1 ? '' : 's'}${groups.length > shown.length ? ` (showing ${shown.length}; raise limitTurns for more)` : ''}`
    shown.forEach((group, index) => {
      blocks.push(
        `${index + 1}. ${label(group.namespace)}turn ${group.turn} · ${group.speaker} · ${group.category} · ${group.hits} hit${group.hits === 1 ? '' : 's'}\n   ${group.best.path}:${group.best.line}\n   ${group.best.snippet}`,
      )
    })
  } else {
    const shown = hits.slice(0, options.limit)
    header = `palace_search ${JSON.stringify(query.text)}: ${hits.length} hit line${hits.length === 1 ? '' : 's'} in ${groups.length} turn${groups.length === 1 ? '' : 's'}${hits.length > shown.length ? ` (showing ${shown.length}; raise limit for more)` : ''}`
    for (const hit of shown) blocks.push(`${label(hit.namespace)}${hit.path}:${hit.line} · turn ${hit.turn} · ${hit.speaker} · ${hit.category}\n   ${hit.snippet}`)
  }
  if (groups.length === 0) header += '\nNo archived turn matched.'
  if (summaries.length > 0) {
    blocks.push(
      groups.length === 0
        ? 'Matches in month summaries instead (a summary is not a turn: read the turns it names with palace_read before relying on details):'
        : 'Also in month summaries (a summary is not a turn):',
    )
    for (const hit of summaries) {
      blocks.push(`- ${label(hit.namespace)}summary ${hit.month} · ${hit.category} · turns ${hit.fromTurn}–${hit.toTurn}\n   ${hit.snippet}`)
    }
  }
  if (skipped.length > 0) blocks.push(`Skipped (could not read): ${skipped.join('; ')}`)
  if (groups.length > 0) blocks.push('Read a turn in full with palace_read(fromTurn=N, toTurn=N).')
  let text = header
  let truncated = false
  const tail = `\n… output capped at ${cap} characters; narrow the query (more keywords, category) or lower limitTurns.`
  for (const block of blocks) {
    if (text.length + 1 + block.length > cap - tail.length) {
      truncated = true
      break
    }
    text += `\n${block}`
  }
  if (truncated) text += tail
  return { text, truncated }
}
