/**
 * The calendar period a query names ("on 9 November, 2022", "in June 2023", "2023年11月9日"),
 * so the ranking can prefer what was said then. Pure: dates are read as UTC calendar days and
 * widened by a day on each side, which covers any time zone the conversation was stored in.
 */

/** A half-open epoch-ms window `[from, to)`. */
export interface Period {
  readonly from: number
  readonly to: number
}

const DAY_MS = 86_400_000
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']
const MONTH = `(${MONTHS.join('|')}|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\\.?`
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?'
const YEAR = '((?:19|20)\\d\\d)'

// Most specific first: a day beats a month, a month beats a year.
const DAY_MONTH_YEAR = new RegExp(`\\b${DAY}\\s+(?:of\\s+)?${MONTH},?\\s*${YEAR}\\b`, 'i')
const MONTH_DAY_YEAR = new RegExp(`\\b${MONTH}\\s+${DAY},?\\s*${YEAR}\\b`, 'i')
const MONTH_YEAR = new RegExp(`\\b${MONTH},?\\s+(?:of\\s+)?${YEAR}\\b`, 'i')
const ISO_DAY = /\b((?:19|20)\d\d)-(\d{1,2})-(\d{1,2})\b/
const CJK_DAY = /((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]/
const CJK_MONTH = /((?:19|20)\d\d)\s*年\s*(\d{1,2})\s*月/
const YEAR_ONLY = /(?:\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b)|(?:((?:19|20)\d\d)\s*年)/i

function monthIndex(name: string): number {
  const lower = name.toLowerCase().replace(/\.$/, '')
  return MONTHS.findIndex((month) => month.startsWith(lower.slice(0, 3)))
}

function dayPeriod(year: number, month: number, day: number): Period | undefined {
  if (month < 0 || month > 11 || day < 1 || day > 31) return undefined
  const start = Date.UTC(year, month, day)
  return { from: start - DAY_MS, to: start + 2 * DAY_MS }
}

function monthPeriod(year: number, month: number): Period | undefined {
  if (month < 0 || month > 11) return undefined
  return { from: Date.UTC(year, month, 1) - DAY_MS, to: Date.UTC(year, month + 1, 1) + DAY_MS }
}

/**
 * The most specific calendar period `query` names, or `undefined` when it names none.
 * A bare month without a year ("in June") names none: it could be any year.
 */
export function queryPeriod(query: string): Period | undefined {
  const text = query.normalize('NFKC')
  let match = DAY_MONTH_YEAR.exec(text)
  if (match) return dayPeriod(Number(match[3]), monthIndex(match[2]!), Number(match[1]))
  match = MONTH_DAY_YEAR.exec(text)
  if (match) return dayPeriod(Number(match[3]), monthIndex(match[1]!), Number(match[2]))
  match = ISO_DAY.exec(text) ?? CJK_DAY.exec(text)
  if (match) return dayPeriod(Number(match[1]), Number(match[2]) - 1, Number(match[3]))
  match = MONTH_YEAR.exec(text)
  if (match) return monthPeriod(Number(match[2]), monthIndex(match[1]!))
  match = CJK_MONTH.exec(text)
  if (match) return monthPeriod(Number(match[1]), Number(match[2]) - 1)
  match = YEAR_ONLY.exec(text)
  if (match) {
    const year = Number(match[1] ?? match[2])
    return { from: Date.UTC(year, 0, 1) - DAY_MS, to: Date.UTC(year + 1, 0, 1) + DAY_MS }
  }
  return undefined
}
