/**
 * Month summaries (`<YYYY-MM>/_summary.md`): append-only, one paragraph per category per
 * archive (or per `palace_summary append` note). Each paragraph starts with a heading and a
 * machine-readable comment so one category can be filtered out without guessing.
 */
import { tokenize } from '@dsh-memory/store'
import { displayTime } from './layout.js'
import { formatRanges, rangesOf } from './ranges.js'
import type { Turn } from './turns.js'

/** What kind of paragraph: written with an archive, or a note about not-yet-archived turns. */
export type SummaryKind = 'archive' | 'note'

/** One paragraph of a month summary. */
export interface SummaryParagraph {
  readonly category: string
  readonly kind: SummaryKind
  readonly fromTurn: number
  readonly toTurn: number
  readonly at: number
  /** The whole paragraph as written (heading included). */
  readonly text: string
  /** The paragraph body without heading and marker. */
  readonly body: string
}

const MARKER = /^<!-- palace:summary category="((?:[^"\\]|\\.)*)" kind=(archive|note) from=(\d+) to=(\d+) at=(\d+) -->$/

/** The first lines of a new month summary. */
export function summaryFileHeader(month: string, namespace: string): string {
  return `# Memory palace summary · ${namespace} · ${month}\n\n`
}

/** Render one paragraph. */
export function renderSummaryParagraph(paragraph: Omit<SummaryParagraph, 'text' | 'body'> & { body: string; turns?: readonly number[] }): string {
  const range = paragraph.turns ? formatRanges(rangesOf(paragraph.turns, paragraph.turns)) : `${paragraph.fromTurn}–${paragraph.toTurn}`
  const label = paragraph.kind === 'note' ? 'note (not yet archived)' : paragraph.category
  const heading = `## ${displayTime(new Date(paragraph.at))} · ${label} · turns ${range}`
  const marker = `<!-- palace:summary category=${JSON.stringify(paragraph.category)} kind=${paragraph.kind} from=${paragraph.fromTurn} to=${paragraph.toTurn} at=${paragraph.at} -->`
  return `${heading}\n${marker}\n\n${paragraph.body.trim()}\n\n`
}

/** Split a month summary into its paragraphs (text outside paragraphs is ignored). */
export function parseSummary(content: string): SummaryParagraph[] {
  const lines = content.split('\n')
  const starts: { index: number; match: RegExpExecArray }[] = []
  lines.forEach((line, index) => {
    const match = MARKER.exec(line)
    // A real marker always follows its heading line.
    if (match && index > 0 && lines[index - 1]!.startsWith('## ')) starts.push({ index, match })
  })
  return starts.map(({ index, match }, i) => {
    const end = (starts[i + 1]?.index ?? lines.length + 1) - 1
    const text = lines.slice(index - 1, end).join('\n').trimEnd()
    const body = lines.slice(index + 1, end).join('\n').trim()
    return {
      category: JSON.parse(`"${match[1]}"`) as string,
      kind: match[2] as SummaryKind,
      fromTurn: Number(match[3]),
      toTurn: Number(match[4]),
      at: Number(match[5]),
      text,
      body,
    }
  })
}

/**
 * A model-free summary for turns archived automatically before a compaction: counts,
 * frequent terms (CJK-aware, through the store's tokenizer), the first human request, tools.
 * It is extractive on purpose: the compaction is already waiting on this archive, so no
 * model call is made here.
 */
export function autoSummary(turns: readonly Turn[]): string {
  if (turns.length === 0) return 'Archived automatically before a compaction (no turns).'
  const speakers = new Map<string, number>()
  const tools = new Map<string, number>()
  const terms = new Map<string, number>()
  for (const turn of turns) {
    const who = turn.speaker.startsWith('plugin:') ? 'plugin' : turn.speaker
    speakers.set(who, (speakers.get(who) ?? 0) + 1)
    for (const tool of turn.tools) tools.set(tool, (tools.get(tool) ?? 0) + 1)
    if (turn.speaker === 'user' || turn.speaker === 'assistant') {
      for (const term of tokenize(turn.head.length > 0 ? `${turn.head} ${turn.body.slice(0, 4000)}` : turn.body.slice(0, 4000))) {
        if (!isTopicTerm(term)) continue
        terms.set(term, (terms.get(term) ?? 0) + 1)
      }
    }
  }
  const first = turns[0]!.turn
  const last = turns[turns.length - 1]!.turn
  const who = [...speakers].map(([name, count]) => `${count} ${name}`).join(', ')
  const topTerms = [...terms]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 10)
    .map(([term]) => term)
  const request = turns.find((turn) => turn.speaker === 'user')
  const parts = [`Archived automatically before a compaction: ${turns.length} turns (${first}–${last}; ${who}).`]
  if (request) parts.push(`First request: “${request.head}”.`)
  if (topTerms.length > 0) parts.push(`Frequent terms: ${topTerms.join(', ')}.`)
  if (tools.size > 0) parts.push(`Tools: ${[...tools].map(([name, count]) => (count > 1 ? `${name} ×${count}` : name)).join(', ')}.`)
  return parts.join(' ')
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

function isTopicTerm(term: string): boolean {
  if (/^\d+$/.test(term)) return false
  if (CJK.test(term)) return [...term].length >= 2
  return term.length >= 3
}
