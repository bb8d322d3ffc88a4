import { clip, oneLine } from './text.js'

/** Why a message opens a branch by itself. */
export type BranchCueKind = 'side-question' | 'trial'

/** A message that starts a side question or a trial, and the words that showed it. */
export interface BranchCue {
  kind: BranchCueKind
  /** The matched words, for the branch's opening note and for tests. */
  cue: string
  /** A short branch title made from the message. */
  title: string
}

// The reference opens a branch for "每次临时追问、试错" (every side question and every trial).
// A side question announces itself at the start of the message; a trial is a proposal to try
// something. Plain "let's explore/look at" is ordinary mainline work and deliberately absent.
const SIDE_QUESTION: readonly RegExp[] = [
  /^\s*(?:by the way|btw|side question|quick question|off[- ]topic|unrelated(?: question)?|tangent)\b/i,
  /^\s*(?:顺便(?:问一下|问问|问|说一下|提一下)|另外问一下|插一句|题外话|顺带问一下|顺带一提|岔开一下)/,
  /^\s*(?:ちなみに|ところで|余談(?:です)?が|ついでに(?:聞き|質問))/,
]
const TRIAL: readonly RegExp[] = [
  /\b(?:let'?s|let us|can we|could we|should we|i want to|i'd like to) (?:try|experiment with|prototype|spike)\b/i,
  /\b(?:try out|trial run|what if we)\b/i,
  /(?:试试|试一下|试一试|尝试一下|做个实验|实验一下|验证一下|搞个原型)/,
  /(?:試して(?:み|ください)|試しに|実験して|検証してみ|プロトタイプを作)/,
]

const MAX_TITLE_CHARS = 60

/**
 * Whether a user message starts a side question or a trial, the two things the reference
 * always opens a branch for. Pure and cheap (a few regular expressions, en/zh/ja).
 */
export function detectBranchCue(text: string): BranchCue | undefined {
  const normalized = typeof text === 'string' ? text.normalize('NFKC') : ''
  for (const [kind, patterns] of [['side-question', SIDE_QUESTION], ['trial', TRIAL]] as const) {
    for (const pattern of patterns) {
      const match = pattern.exec(normalized)
      if (match) return { kind, cue: match[0].trim(), title: clip(oneLine(normalized), MAX_TITLE_CHARS) }
    }
  }
  return undefined
}
