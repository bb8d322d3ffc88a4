/**
 * The LoCoMo file format (see shared/bench/README.md): parsing with errors that name the
 * offending path, evidence-id normalisation and session dates.
 */

/** One dialogue turn. */
export interface LocomoTurn {
  readonly speaker: string
  /** `D<session>:<turn>`. */
  readonly diaId: string
  readonly text: string
  /** Caption of a shared image, when the turn had one. */
  readonly imageCaption?: string
}

/** One session of a conversation. */
export interface LocomoSession {
  /** The N of `session_N`. */
  readonly index: number
  /** Epoch ms parsed from `session_N_date_time`. */
  readonly time: number
  readonly turns: readonly LocomoTurn[]
}

/** One question with its evidence turns. */
export interface LocomoQuestion {
  readonly question: string
  /** 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. */
  readonly category: number
  /** Normalised `D<s>:<t>` ids (malformed ones dropped). */
  readonly evidence: readonly string[]
}

/** An extracted fact tied to the turn(s) it came from. */
export interface LocomoObservation {
  readonly session: number
  readonly speaker: string
  readonly text: string
  readonly diaIds: readonly string[]
}

/** One LoCoMo sample: a long conversation between two speakers and its questions. */
export interface LocomoSample {
  readonly sampleId: string
  readonly speakers: readonly [string, string]
  readonly sessions: readonly LocomoSession[]
  readonly questions: readonly LocomoQuestion[]
  readonly observations: readonly LocomoObservation[]
}

/** A file that is not LoCoMo-shaped; `path` names where. */
export class LocomoFormatError extends Error {
  override readonly name = 'LocomoFormatError'
  readonly code = 'invalid-data'
  /** JSON path of the offending value (`$[0].conversation.session_1[2].text`). */
  readonly path: string
  constructor(path: string, message: string) {
    super(`${path}: ${message}`)
    this.path = path
  }
}

const DIA_ID = /^D\d+:\d+$/
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']

/** Split LoCoMo evidence strings ("D8:6; D9:17") into valid ids; malformed ids are dropped. */
export function normaliseEvidence(evidence: unknown): string[] {
  if (!Array.isArray(evidence)) return []
  const ids = evidence.flatMap((entry) => (typeof entry === 'string' ? entry.split(/[;,\s]+/) : [])).map((id) => id.trim())
  return [...new Set(ids.filter((id) => DIA_ID.test(id)))]
}

/**
 * Parse "1:56 pm on 8 May, 2023" (UTC). Returns NaN when the text has another shape.
 */
export function parseSessionDate(text: string): number {
  const match = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(text)
  if (!match) return Number.NaN
  const [, hours, minutes, half, day, monthName, year] = match
  const month = MONTHS.indexOf(monthName!.toLowerCase())
  if (month < 0) return Number.NaN
  let hour = Number(hours) % 12
  if (half!.toLowerCase() === 'pm') hour += 12
  return Date.UTC(Number(year), month, Number(day), hour, Number(minutes))
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function requireString(value: unknown, path: string): string {
  if (typeof value !== 'string') throw new LocomoFormatError(path, `expected a string, got ${value === null ? 'null' : typeof value}`)
  return value
}

/**
 * Validate and convert parsed LoCoMo JSON.
 * @throws LocomoFormatError naming the first offending path.
 */
export function parseLocomo(json: unknown): LocomoSample[] {
  if (!Array.isArray(json)) throw new LocomoFormatError('$', 'expected a JSON array of samples')
  if (json.length === 0) throw new LocomoFormatError('$', 'the file holds no samples')
  return json.map((raw, sampleIndex) => {
    const at = `$[${sampleIndex}]`
    if (!isObject(raw)) throw new LocomoFormatError(at, 'expected a sample object')
    const sampleId = requireString(raw.sample_id, `${at}.sample_id`)
    const conversation = raw.conversation
    if (!isObject(conversation)) throw new LocomoFormatError(`${at}.conversation`, 'expected an object')
    const speakers: [string, string] = [requireString(conversation.speaker_a, `${at}.conversation.speaker_a`), requireString(conversation.speaker_b, `${at}.conversation.speaker_b`)]
    const sessions: LocomoSession[] = []
    for (const key of Object.keys(conversation)) {
      const match = /^session_(\d+)$/.exec(key)
      if (!match) continue
      const index = Number(match[1])
      const turnsRaw = conversation[key]
      const sessionPath = `${at}.conversation.${key}`
      if (!Array.isArray(turnsRaw)) throw new LocomoFormatError(sessionPath, 'expected an array of turns')
      const dateText = requireString(conversation[`${key}_date_time`], `${sessionPath}_date_time`)
      const time = parseSessionDate(dateText)
      if (Number.isNaN(time)) throw new LocomoFormatError(`${sessionPath}_date_time`, `unrecognised date ${JSON.stringify(dateText)} (expected like "1:56 pm on 8 May, 2023")`)
      const turns = turnsRaw.map((turn, turnIndex): LocomoTurn => {
        const turnPath = `${sessionPath}[${turnIndex}]`
        if (!isObject(turn)) throw new LocomoFormatError(turnPath, 'expected a turn object')
        const diaId = requireString(turn.dia_id, `${turnPath}.dia_id`)
        const caption = turn.blip_caption
        return {
          speaker: requireString(turn.speaker, `${turnPath}.speaker`),
          diaId,
          text: requireString(turn.text, `${turnPath}.text`),
          ...(typeof caption === 'string' && caption.trim() ? { imageCaption: caption.trim() } : {}),
        }
      })
      sessions.push({ index, time, turns })
    }
    if (sessions.length === 0) throw new LocomoFormatError(`${at}.conversation`, 'has no session_N turn lists')
    sessions.sort((a, b) => a.index - b.index)
    const qaRaw = raw.qa
    if (!Array.isArray(qaRaw)) throw new LocomoFormatError(`${at}.qa`, 'expected an array of questions')
    const questions = qaRaw.map((item, qaIndex): LocomoQuestion => {
      const qaPath = `${at}.qa[${qaIndex}]`
      if (!isObject(item)) throw new LocomoFormatError(qaPath, 'expected a question object')
      const category = item.category
      if (typeof category !== 'number' || !Number.isInteger(category)) throw new LocomoFormatError(`${qaPath}.category`, 'expected an integer')
      return { question: requireString(item.question, `${qaPath}.question`), category, evidence: normaliseEvidence(item.evidence) }
    })
    const observations: LocomoObservation[] = []
    if (raw.observation !== undefined) {
      if (!isObject(raw.observation)) throw new LocomoFormatError(`${at}.observation`, 'expected an object')
      for (const [key, bySpeaker] of Object.entries(raw.observation)) {
        const match = /^session_(\d+)_observation$/.exec(key)
        if (!match || !isObject(bySpeaker)) continue
        for (const [speaker, facts] of Object.entries(bySpeaker)) {
          if (!Array.isArray(facts)) continue
          for (const fact of facts) {
            if (!Array.isArray(fact) || typeof fact[0] !== 'string') continue
            const diaIds = normaliseEvidence(Array.isArray(fact[1]) ? fact[1] : [fact[1]])
            if (diaIds.length === 0) continue
            observations.push({ session: Number(match[1]), speaker, text: fact[0], diaIds })
          }
        }
      }
    }
    return { sampleId, speakers, sessions, questions, observations }
  })
}

/** The workspace a sample's turns and memories are stored under. */
export const workspaceOf = (sample: Pick<LocomoSample, 'sampleId'>): string => `locomo/${sample.sampleId}`

/** Questions that have evidence turns, categories 1-4 (5, adversarial, is skipped). */
export function eligibleQuestions(sample: LocomoSample): LocomoQuestion[] {
  return sample.questions.filter((question) => question.category >= 1 && question.category <= 4 && question.evidence.length > 0)
}

/**
 * Keep the samples named in `ids` (in file order), for a tune / held-out split of one file.
 * @throws LocomoFormatError naming an id the file does not hold.
 */
export function selectSamples(samples: readonly LocomoSample[], ids: readonly string[]): LocomoSample[] {
  const known = new Set(samples.map((sample) => sample.sampleId))
  const missing = ids.filter((id) => !known.has(id))
  if (missing.length > 0) throw new LocomoFormatError('$', `no sample ${missing.map((id) => JSON.stringify(id)).join(', ')} (the file holds ${[...known].join(', ')})`)
  const wanted = new Set(ids)
  return samples.filter((sample) => wanted.has(sample.sampleId))
}

/** Progress callbacks (a bar on a TTY, plain lines otherwise). */
export interface BenchProgress {
  start(phase: string, total: number): void
  tick(detail?: string): void
  stop(): void
}
