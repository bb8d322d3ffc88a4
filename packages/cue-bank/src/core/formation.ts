/**
 * Cue formation, the write side's work on one finished turn: read its text into keywords and
 * a shown excerpt (synchronously, when the turn ends), then write the conversation cue, merge
 * the task cue, update the idiom window and apply decay and the LRU cap (inside the caller's
 * transaction, when the queued write runs). No clock, queue or retry here: the engine owns those.
 */
import { randomUUID } from 'node:crypto'
import { redactSecrets } from '@dsh-memory/store'
import type { CueWrittenEvent, SessionRef, TurnRecord } from './cue-bank-contract.js'
import { computeIdioms } from './idioms.js'
import { candidateTerms, extractKeywords, type Keyword } from './keywords.js'
import { mergeKeywords } from './matching.js'
import type { Cue, CueDimensions } from './model.js'
import type { ExtractOptions, ResolvedCueBankOptions } from './options.js'
import type { CueWriter } from './cue-queries.js'
import { detectLanguage, excerpt, omitCodeBlocks, type TextLanguage } from './text.js'

const DAY_MS = 86_400_000
/** Longest stored detail, in characters. */
const MAX_DETAIL = 2000
/** Host message ids kept on a task cue. */
const MAX_TASK_SOURCES = 50
/** Longest text (per side of a turn, and per new message) keywords are extracted from. */
export const MAX_EXTRACT_CHARS = 20_000

/** What a turn's cues are made of, computed when the turn ends. */
export interface CueDraft {
  readonly keywords: readonly Keyword[]
  /** Candidate idiom terms of the human text. */
  readonly terms: readonly string[]
  readonly sourceIds: readonly string[]
  readonly summary: string
  readonly detail: string
  readonly language: TextLanguage
  readonly workspace: string
  /** The extract options in force when the turn ended. */
  readonly extract: ExtractOptions
}

/** A turn read for the write side. */
export interface TurnDraft {
  /** The human text's keywords: the topic reference of the session's next message. */
  readonly topic: readonly Keyword[]
  /** Undefined when extraction is off or the turn yields no keywords. */
  readonly cue: CueDraft | undefined
}

/** Read a finished turn; undefined when it has no human message. */
export function draftTurn(session: SessionRef, record: TurnRecord, options: ResolvedCueBankOptions): TurnDraft | undefined {
  const user = record.user.filter((message) => message.text.trim().length > 0)
  if (user.length === 0) return undefined
  // Bounded so a huge paste or reply cannot stall the host's event path at turn end.
  const userText = redactSecrets(user.map((message) => message.text).join('\n').slice(0, MAX_EXTRACT_CHARS)).text
  const assistantText = redactSecrets(record.assistant.map((message) => message.text).join('\n').slice(0, MAX_EXTRACT_CHARS)).text
  const { extract } = options
  const topic = extractKeywords(userText, { max: options.topic.maxKeywords, minLength: extract.keywordMinLen })
  if (!extract.enabled) return { topic, cue: undefined }
  const keywords = turnKeywords(userText, assistantText, extract.maxKeywordsPerTurn, extract.keywordMinLen)
  if (keywords.length === 0) return { topic, cue: undefined }
  // Keywords come from the full text (code is stripped by the extractor); what is shown keeps prose only.
  const shownUser = omitCodeBlocks(userText)
  const shownAssistant = omitCodeBlocks(assistantText)
  return {
    topic,
    cue: {
      keywords,
      terms: [...new Set(candidateTerms(userText, extract.keywordMinLen))],
      sourceIds: [...user, ...record.assistant].map((message) => message.id).filter((id) => id.length > 0),
      summary: excerpt(shownUser, 120),
      detail: cap(`User: ${shownUser}${shownAssistant ? `\nAssistant: ${shownAssistant}` : ''}`, MAX_DETAIL),
      language: detectLanguage(userText),
      workspace: session.workspace,
      extract,
    },
  }
}

/** Where and when a drafted turn is written. */
export interface TurnWrite {
  readonly partition: string
  readonly sessionId: string
  readonly turn: number
  /** The topic segment the turn belongs to (idiom window key). */
  readonly segment: string
  readonly draft: CueDraft
  readonly now: number
}

/**
 * Write a drafted turn: its conversation cue, the session's task cue (created, or merged when
 * the turn is newer), the idiom window, then decay and the LRU cap. Call inside one write unit
 * (`repository.transaction`); `options` are those in force at write time (caps and decay are live settings).
 */
export async function writeTurnCues(repository: CueWriter, options: ResolvedCueBankOptions, write: TurnWrite): Promise<CueWrittenEvent> {
  const { partition, sessionId, turn, segment, draft, now } = write
  const { extract } = draft
  const dimensions = (level: Cue['level']): CueDimensions => ({
    trigger: 'keywords',
    perspective: level,
    language: draft.language,
    ...(draft.workspace ? { workspace: draft.workspace } : {}),
  })
  const cueIds: string[] = []
  const conversation: Cue = {
    id: `c-${randomUUID()}`,
    partition,
    level: 'conversation',
    sessionId,
    turn,
    summary: draft.summary,
    detail: draft.detail,
    keywords: [...draft.keywords],
    dimensions: dimensions('conversation'),
    refSessions: [sessionId],
    sourceMessageIds: [...draft.sourceIds],
    embedding: null,
    embeddingModel: null,
    createdAt: now,
    lastMentionedAt: now,
    lastTouchedAt: now,
    hitCount: 0,
  }
  if (await repository.insertCue(conversation)) cueIds.push(conversation.id)

  const task = await repository.taskCue(partition, sessionId)
  if (!task) {
    const created: Cue = {
      ...conversation,
      id: `t-${randomUUID()}`,
      level: 'task',
      keywords: mergeKeywords([], draft.keywords, extract.maxKeywordsPerTurn * 2),
      dimensions: dimensions('task'),
    }
    if (await repository.insertCue(created)) cueIds.push(created.id)
  } else if (task.turn < turn) {
    // A replayed turn (resume) is not merged twice.
    await repository.updateCue({
      ...task,
      turn,
      keywords: mergeKeywords(task.keywords, draft.keywords, extract.maxKeywordsPerTurn * 2),
      detail: cap(`First request: ${excerpt(firstRequest(task.detail), 600)}\nLatest: ${draft.detail}`, MAX_DETAIL),
      sourceMessageIds: [...task.sourceMessageIds, ...draft.sourceIds].slice(-MAX_TASK_SOURCES),
      embedding: null,
      embeddingModel: null,
      lastMentionedAt: now,
      lastTouchedAt: Math.max(task.lastTouchedAt, now),
    })
    cueIds.push(task.id)
  }

  if (draft.terms.length > 0) await repository.addUserTurn(partition, sessionId, turn, segment, [...draft.terms], now)
  const window = await repository.recentUserTurns(partition, extract.userIdiomWindowTurns)
  await repository.upsertIdioms(partition, computeIdioms(window))
  await repository.evictIdioms(partition, options.maxIdioms)
  await repository.pruneUserTurns(partition, extract.userIdiomWindowTurns)

  const evicted: string[] = []
  const cutoff = pruneCutoff(options, now)
  if (cutoff !== undefined) evicted.push(...(await repository.deleteUntouchedSince(partition, cutoff)))
  evicted.push(...(await repository.evictCues(partition, options.maxTopics)))
  return { partition, sessionId, turn, cueIds: cueIds.filter((id) => !evicted.includes(id)), evicted }
}

/** The keywords of a turn: the human text counts double, the reply fills in. */
export function turnKeywords(userText: string, assistantText: string, max: number, minLength: number): Keyword[] {
  const user = extractKeywords(userText, { max: max * 2, minLength })
  const reply = extractKeywords(assistantText, { max: max * 2, minLength })
  const weights = new Map<string, number>()
  for (const keyword of user) weights.set(keyword.word, (weights.get(keyword.word) ?? 0) + 2 * keyword.score)
  for (const keyword of reply) weights.set(keyword.word, (weights.get(keyword.word) ?? 0) + keyword.score)
  const top = [...weights.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, max)
  const sum = top.reduce((total, [, weight]) => total + weight, 0)
  return top.map(([word, weight]) => ({ word, score: Math.round((weight / sum) * 10_000) / 10_000 }))
}

/** Text embedded for a cue: what it is about, its keywords and the start of its detail. */
export function embeddingText(cue: Pick<Cue, 'summary' | 'keywords' | 'detail'>): string {
  return `${cue.summary}\n${cue.keywords.map((keyword) => keyword.word).join(', ')}\n${excerpt(cue.detail, 500)}`
}

/** The touch time before which a cue's decay factor is under `pruneBelow`. */
function pruneCutoff(options: ResolvedCueBankOptions, now: number): number | undefined {
  const { halfLifeDays, pruneBelow } = options.decay
  if (!(halfLifeDays > 0) || !(pruneBelow > 0)) return undefined
  return now - halfLifeDays * DAY_MS * Math.log2(1 / pruneBelow)
}

function firstRequest(detail: string): string {
  const first = /^First request: ([\s\S]*?)\nLatest: /.exec(detail)
  if (first) return first[1]!
  const user = /^User: ([\s\S]*?)(?:\nAssistant: |$)/.exec(detail)
  return user ? user[1]! : detail
}

function cap(text: string, max: number): string {
  const points = Array.from(text)
  return points.length <= max ? text : points.slice(0, max - 1).join('') + '…'
}
