import { tokenize } from '@dsh-memory/store'
import type { UnknownRoute } from './options.js'
import type { RouteKind } from './types.js'

/** How one message was classified, with the evidence. */
export interface RouteDecision {
  /** `project` and `chat` are confident; `unknown` means neither side led by the margin. */
  route: RouteKind
  /** projectScore − chatScore: positive leans project, negative leans chit-chat. */
  score: number
  projectScore: number
  chatScore: number
  /** The configured keywords that matched, per side, and the structural signals seen. */
  matched: { project: string[]; chat: string[]; signals: string[] }
}

/** The router's inputs (a subset of the tree options). */
export interface RouterOptions {
  chatKeywords: readonly string[]
  projectKeywords: readonly string[]
  routeMargin: number
}

interface CompiledKeyword {
  keyword: string
  /** Tokens that must all be present, or empty when `phrase` is used instead. */
  tokens: string[]
  /** Fallback for keywords made only of stop words ("how are you"): a bounded phrase match. */
  phrase: RegExp | null
}

const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]/u
const ASCII_WORD = /^[a-z0-9]+$/

// Structural hints that a message is about work even when no keyword matches.
const SIGNALS: Array<[string, RegExp]> = [
  ['code', /```|`[^`\n]+`/],
  ['file', /\b[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|py|go|rs|java|kt|rb|php|cs|cpp|cc|c|h|hpp|json|ya?ml|toml|md|sql|sh|css|scss|html|vue|svelte|lock)\b/i],
  ['path', /(?:^|\s)(?:\.{0,2}\/|~\/)?[\w.-]+\/[\w.-]+\/[\w./-]*/],
  ['identifier', /\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z0-9]+(?:_[a-z0-9]+)+\b|\b\w+\(\)/],
  ['error', /\b\w*(?:Error|Exception)\b|\bat \S+ \(.+:\d+:\d+\)|\bexit code \d+/],
]
const MAX_SIGNAL_SCORE = 2
// Nothing but emoji, punctuation and whitespace: a reaction, not work.
const REACTION_ONLY = /^[\p{Extended_Pictographic}\p{P}\p{S}\s]+$/u

/**
 * Compile keyword lists once; `route()` is then a tokenize plus set lookups. Matching uses the
 * store's tokenizer, so CJK keywords match inside unsegmented sentences (through character
 * bigrams) and English keywords match inflections (`deploy` matches `deployment`).
 */
export class MessageRouter {
  readonly #chat: CompiledKeyword[]
  readonly #project: CompiledKeyword[]
  readonly #margin: number

  constructor(options: RouterOptions) {
    this.#chat = options.chatKeywords.map(compileKeyword)
    this.#project = options.projectKeywords.map(compileKeyword)
    this.#margin = options.routeMargin
  }

  /** Classify one message. Pure and cheap (no I/O, no model call). */
  route(text: string): RouteDecision {
    const normalized = typeof text === 'string' ? text.normalize('NFKC') : ''
    const tokens = tokenize(normalized)
    const tokenSet = new Set(tokens)
    const asciiTokens = tokens.filter((token) => ASCII_WORD.test(token))
    const lower = normalized.toLowerCase()
    const project = this.#project.filter((keyword) => matches(keyword, tokenSet, asciiTokens, lower)).map((k) => k.keyword)
    const chat = this.#chat.filter((keyword) => matches(keyword, tokenSet, asciiTokens, lower)).map((k) => k.keyword)
    const signals = SIGNALS.filter(([, pattern]) => pattern.test(normalized)).map(([name]) => name)
    const projectScore = project.length + Math.min(signals.length, MAX_SIGNAL_SCORE)
    let chatScore = chat.length
    if (normalized.trim().length > 0 && REACTION_ONLY.test(normalized)) chatScore += 1
    const score = projectScore - chatScore
    const route: RouteKind = score >= this.#margin ? 'project' : score <= -this.#margin ? 'chat' : 'unknown'
    return { route, score, projectScore, chatScore, matched: { project, chat, signals } }
  }
}

function compileKeyword(keyword: string): CompiledKeyword {
  const normalized = keyword.normalize('NFKC').toLowerCase().trim()
  let tokens = [...new Set(tokenize(normalized))]
  if (CJK.test(normalized)) {
    // The segmenter may cut a short keyword differently from the same word inside a sentence;
    // the character bigrams are stable, so require those (plus any non-CJK parts).
    const bigrams = tokens.filter((token) => [...token].length === 2 && CJK.test(token))
    if (bigrams.length > 0) tokens = tokens.filter((token) => !CJK.test(token) || bigrams.includes(token))
  }
  if (tokens.length > 0) return { keyword, tokens, phrase: null }
  const escaped = normalized.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+')
  return { keyword, tokens: [], phrase: new RegExp(CJK.test(normalized) ? escaped : `(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'u') }
}

function matches(keyword: CompiledKeyword, tokenSet: Set<string>, asciiTokens: string[], lower: string): boolean {
  if (keyword.phrase) return keyword.phrase.test(lower)
  return keyword.tokens.every(
    (token) => tokenSet.has(token) || (token.length >= 4 && ASCII_WORD.test(token) && asciiTokens.some((candidate) => candidate.startsWith(token))),
  )
}

/**
 * Where a classified user message is recorded: chit-chat to the chat partition, project
 * messages to the project, and an unsure one where `unknownRoute` says.
 */
export function routeTarget(decision: RouteDecision, unknownRoute: UnknownRoute): 'chat' | 'project' | 'skipped' {
  if (decision.route === 'chat') return 'chat'
  if (decision.route === 'project') return 'project'
  return unknownRoute === 'chat' ? 'chat' : unknownRoute === 'skip' ? 'skipped' : 'project'
}
