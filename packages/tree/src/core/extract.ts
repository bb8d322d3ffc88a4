import { replaceCodeFences } from '@dsh-memory/store/kit'
import { clip, oneLine, prepareText, similarity, splitSentences, textKey } from './text.js'
import type { BranchEvent, ItemKind } from './types.js'

/** A conclusion ready to become a mainline item. */
export interface Conclusion {
  kind: ItemKind
  text: string
}

// Explicit labels win over cues: "Decision: …", "约束：…", "結論: …".
const LABELS: Array<[ItemKind, RegExp]> = [
  ['constraint', /^(?:hard\s+)?(?:constraints?|requirements?|rules?|limits?|约束|限制|要求|前提|制約|条件|ルール)\s*[:：]\s*/iu],
  ['decision', /^(?:decisions?|decided|resolution|决定|决策|结论性决定|決定|方針)\s*[:：]\s*/iu],
  ['outcome', /^(?:outcomes?|results?|findings?|conclusions?|learned|结论|结果|成果|发现|結論|結果|成果|判明)\s*[:：]\s*/iu],
  ['question', /^(?:open\s+questions?|questions?|todo|tbd|unresolved|待解(?:问题)?|待定|问题|疑问|未解决|課題|未解決|質問|要確認)\s*[:：]\s*/iu],
]

// Markdown headings that set the kind of the lines below them ("## Decisions", "### 约束").
const HEADINGS: Array<[ItemKind, RegExp]> = [
  ['constraint', /^#{1,6}\s*(?:hard\s+)?(?:constraints?|requirements?|rules?|约束|限制|要求|制約|条件)/iu],
  ['decision', /^#{1,6}\s*(?:decisions?|决定|决策|決定|方針)/iu],
  ['outcome', /^#{1,6}\s*(?:outcomes?|results?|findings?|conclusions?|结论|结果|成果|发现|結論|結果|成果)/iu],
  ['question', /^#{1,6}\s*(?:open\s+questions?|questions?|todo|待解|待定|问题|未解决|課題|未解決)/iu],
]

const CUES: Array<[ItemKind, RegExp]> = [
  [
    'constraint',
    /\b(?:must|mustn't|never|always|do not|don't|cannot|can't|required|mandatory|forbidden|not allowed|at most|at least|no more than|only use)\b|必须|不能|不要|禁止|不允许|务必|一定要|只能|不得|至少|最多|不可以|必ず|してはいけない|してはならない|禁止|必須|しないこと|ないでください|以内/iu,
  ],
  [
    'decision',
    /\b(?:decided|decide to|we'll use|we will use|let's use|let's go with|going with|chose|choose to|settled on|adopt(?:ed)?|switch(?:ed)? to|decision)\b|决定|选用|采用|就用|改用|确定用|定为|決定|決めた|採用|ことにした|ことにします/iu,
  ],
  [
    'outcome',
    /\b(?:works|worked|fixed|resolved|solved|result(?:s|ed)?|conclusion|found that|turns out|turned out|shows|showed|succeeded|passes|passed|measured|confirmed|verified|is faster|is slower|benchmark shows)\b|结论|结果|发现|成功|解决了|修复了|搞定|验证|证实|更快|更慢|結論|結果|解決|成功|判明|分かった|わかった|確認した|速い|遅い/iu,
  ],
  [
    'question',
    /\b(?:open question|unclear|tbd|todo|not sure|need to check|to be decided)\b|待定|待解|未解决|不确定|需要确认|还不清楚|未定|未解決|要確認|不明/iu,
  ],
]

const QUESTION_END = /[?？]\s*$/u
const BULLET_LINE = /^(?:[-*•·]|\d+[.)、])\s/u
const MIN_SENTENCE = 4

/** The kind an explicit label gives a line, with the label removed; undefined without a label. */
export function labelOf(line: string): Conclusion | undefined {
  for (const [kind, pattern] of LABELS) {
    const match = pattern.exec(line)
    if (match) {
      const text = line.slice(match[0].length).trim()
      return text.length > 0 ? { kind, text } : undefined
    }
  }
  return undefined
}

/** The kind a sentence's wording suggests (constraint > decision > outcome > question), or undefined. */
export function cueOf(sentence: string): ItemKind | undefined {
  for (const [kind, pattern] of CUES) if (pattern.test(sentence)) return kind
  if (QUESTION_END.test(sentence)) return 'question'
  return undefined
}

/**
 * Statements of the given kinds in a user's project message: labelled lines, or sentences
 * whose wording marks them (a constraint: "must", "必须", "必ず"; a decision: "we decided",
 * "决定", "採用"). Questions are never taken as constraints or decisions.
 */
export function extractStatements(text: string, kinds: readonly ItemKind[], maxChars: number): Conclusion[] {
  const out: Conclusion[] = []
  for (const sentence of splitSentences(withoutCode(text))) {
    const labelled = labelOf(sentence)
    const kind = labelled?.kind ?? cueOf(sentence)
    if (!kind || !kinds.includes(kind)) continue
    if (!labelled && kind !== 'question' && QUESTION_END.test(sentence)) continue
    const body = oneLine(labelled?.text ?? sentence)
    if ([...body].length < MIN_SENTENCE) continue
    out.push({ kind, text: clip(body, maxChars) })
  }
  return dedupe(out)
}

/**
 * Parse a merge summary written by the model (or a person). Lines may be labelled
 * ("Decision: …", "约束：…"), grouped under headings ("## Outcomes"), or plain; plain lines
 * take the kind their wording suggests, else `outcome` (a branch's default product).
 */
export function parseSummary(summary: string, maxChars: number): Conclusion[] {
  const out: Conclusion[] = []
  let section: ItemKind | undefined
  let afterBlank = false
  for (const rawLine of withoutCode(summary).split(/\r?\n/)) {
    const line = rawLine.trim()
    if (line.length === 0) {
      afterBlank = true
      continue
    }
    // A heading's section covers the lines right under it and its list; a paragraph after a
    // blank line is prose again.
    if (afterBlank && !BULLET_LINE.test(line)) section = undefined
    afterBlank = false
    const heading = HEADINGS.find(([, pattern]) => pattern.test(line))
    if (heading) {
      section = heading[0]
      continue
    }
    if (/^#{1,6}\s/.test(line)) {
      section = undefined
      continue
    }
    for (const sentence of splitLine(line)) {
      const labelled = labelOf(sentence)
      const kind = labelled?.kind ?? section ?? cueOf(sentence) ?? 'outcome'
      const body = oneLine(labelled?.text ?? sentence)
      if ([...body].length < MIN_SENTENCE) continue
      out.push({ kind, text: clip(body, maxChars) })
    }
  }
  return dedupe(out)
}

/**
 * Heuristic conclusions of a branch log when no summary is given: the latest sentences whose
 * wording marks a constraint, decision or outcome (questions only when labelled), at most
 * `max`, in log order. When nothing is marked, one outcome names the branch and quotes the
 * last assistant (or note) text, so a merge always leaves a trace on the mainline.
 */
export function extractFromBranch(title: string, events: readonly BranchEvent[], max: number, maxChars: number): Conclusion[] {
  const candidates: Conclusion[] = []
  for (const event of events) {
    if (event.kind !== 'user' && event.kind !== 'assistant' && event.kind !== 'note') continue
    for (const sentence of splitSentences(withoutCode(event.text))) {
      const labelled = labelOf(sentence)
      let kind = labelled?.kind ?? cueOf(sentence)
      if (!kind) continue
      // An unlabelled question in a branch is usually just the exploration asking, not an open item.
      if (kind === 'question' && !labelled) continue
      if (!labelled && event.kind === 'user' && kind === 'outcome') kind = undefined
      if (!kind) continue
      const body = oneLine(labelled?.text ?? sentence)
      if ([...body].length < MIN_SENTENCE) continue
      candidates.push({ kind, text: clip(body, maxChars) })
    }
  }
  const unique = dedupe(candidates)
  if (unique.length > 0) return unique.slice(-max)
  const last = [...events].reverse().find((event) => event.kind === 'assistant' || event.kind === 'note')
  const quote = last ? splitSentences(withoutCode(last.text))[0] : undefined
  const text = quote ? `Explored "${title}": ${oneLine(quote)}` : `Explored "${title}" (no conclusion was recorded)`
  return [{ kind: 'outcome', text: clip(text, maxChars) }]
}

/**
 * Drop conclusions that repeat each other or an existing text (same key, or token
 * similarity ≥ `threshold`). Keeps the first occurrence.
 */
export function dedupe(items: readonly Conclusion[], existing: readonly string[] = [], threshold = 0.85): Conclusion[] {
  const kept: Conclusion[] = []
  const seen = existing.map((text) => ({ key: textKey(text), text }))
  for (const item of items) {
    const key = textKey(item.text)
    if (seen.some((other) => other.key === key || similarity(other.text, item.text) >= threshold)) continue
    seen.push({ key, text: item.text })
    kept.push(item)
  }
  return kept
}

function splitLine(line: string): string[] {
  // A labelled line is one statement even if it has several sentences.
  if (labelOf(line.replace(/^\s*(?:[-*•·>]|\d+[.)、])\s*/u, ''))) return [line.replace(/^\s*(?:[-*•·>]|\d+[.)、])\s*/u, '')]
  return splitSentences(line)
}

/** `text` with fenced code blanked out: code is never a conclusion. */
function withoutCode(text: string): string {
  return replaceCodeFences(text, () => ' ')
}

/** The conclusions a merge caller gives: a free-text summary and lists by kind. */
export interface GivenConclusions {
  summary?: string
  constraints?: readonly string[]
  decisions?: readonly string[]
  outcomes?: readonly string[]
  questions?: readonly string[]
}

/**
 * Check and collect a merge caller's conclusions: the summary's parsed lines, then each list
 * entry as its kind.
 * @throws TreeError `invalid-argument` naming the bad field (`summary`, `decisions[2]`, …).
 */
export function givenConclusions(input: GivenConclusions, maxItemChars: number, maxSummaryChars: number): { summary: string | undefined; given: Conclusion[] } {
  const summary = input.summary === undefined ? undefined : prepareText(input.summary, 'summary', maxSummaryChars)
  const given: Conclusion[] = []
  if (summary) given.push(...parseSummary(summary, maxItemChars))
  const lists: Array<[ItemKind, readonly string[] | undefined]> = [
    ['constraint', input.constraints],
    ['decision', input.decisions],
    ['outcome', input.outcomes],
    ['question', input.questions],
  ]
  for (const [kind, list] of lists) {
    for (const [index, entry] of (list ?? []).entries()) given.push({ kind, text: oneLine(prepareText(entry, `${kind}s[${index}]`, maxItemChars)) })
  }
  return { summary, given }
}
