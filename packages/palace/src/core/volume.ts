/**
 * Volume files: one markdown file per category per month, split by turn when it would
 * exceed `maxFileBytes`. Each turn starts with a marker comment carrying the volume's random
 * fence, so a turn that quotes a marker (a model discussing this very format) cannot be
 * mistaken for a turn boundary.
 */
import { randomBytes } from 'node:crypto'
import { displayTime } from './layout.js'
import type { Turn } from './turns.js'

/** Format version written in every volume header. */
export const VOLUME_VERSION = 1

const VOLUME_HEADER = /^<!-- palace:volume v(\d+) fence=([0-9a-f]+) -->$/

/** A new random fence. */
export function newFence(): string {
  return randomBytes(6).toString('hex')
}

/** The first lines of a new volume. */
export function volumeHeader(fence: string, title: string): string {
  return `<!-- palace:volume v${VOLUME_VERSION} fence=${fence} -->\n# ${title}\n\n`
}

/** One turn as it is written into a volume: marker, heading, verbatim body, blank line. */
export function turnBlock(turn: Turn, fence: string): string {
  const when = turn.at > 0 ? ` · ${displayTime(new Date(turn.at))}` : ''
  const body = turn.body.length > 0 ? turn.body : '(empty)'
  return `<!-- palace:turn ${turn.turn} fence=${fence} -->\n## Turn ${turn.turn} · ${turn.speaker}${when}\n\n${body}${body.endsWith('\n') ? '' : '\n'}\n`
}

/** Number of lines a text adds (its newline count). */
export function lineCount(text: string): number {
  let count = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++
  return count
}

/** What a volume header says. */
export interface VolumeHeader {
  readonly version: number
  readonly fence: string
}

/** Read the header of a volume's content, or undefined when it is not a palace volume. */
export function parseVolumeHeader(content: string): VolumeHeader | undefined {
  const first = content.slice(0, content.indexOf('\n') === -1 ? content.length : content.indexOf('\n'))
  const match = VOLUME_HEADER.exec(first)
  if (!match) return undefined
  return { version: Number(match[1]), fence: match[2]! }
}

/** One turn located in a volume. */
export interface VolumeTurn {
  readonly turn: number
  /** 1-based line of the turn marker. */
  readonly line: number
  /** Lines the turn block spans (marker included). */
  readonly lines: number
}

/** Locate every turn of a volume by its fenced markers (used by recovery and checks). */
export function scanVolume(content: string): VolumeTurn[] {
  const header = parseVolumeHeader(content)
  if (!header) return []
  const marker = new RegExp(`^<!-- palace:turn (\\d+) fence=${header.fence} -->$`)
  const lines = content.split('\n')
  const found: { turn: number; line: number }[] = []
  lines.forEach((text, index) => {
    const match = marker.exec(text)
    if (match) found.push({ turn: Number(match[1]), line: index + 1 })
  })
  const total = content.endsWith('\n') ? lines.length - 1 : lines.length
  return found.map((entry, i) => ({ ...entry, lines: (found[i + 1]?.line ?? total + 1) - entry.line }))
}
