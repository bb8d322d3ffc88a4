/**
 * Charts as inline SVG generated on the server: no chart library, no script, nothing fetched
 * (the network may be closed and the page has a strict CSP). Colours come from CSS classes
 * (`series-0` …) so both themes restyle them.
 */
import { escapeHtml } from './html.ts'

/** One plotted series. */
export interface ChartSeries {
  readonly name: string
  readonly values: readonly number[]
}

/** Input of {@link stackedAreaChart} and {@link barChart}. */
export interface ChartInput {
  /** One label per x position (same length as every series). */
  readonly labels: readonly string[]
  readonly series: readonly ChartSeries[]
  /** Accessible title. */
  readonly title: string
  readonly width?: number
  readonly height?: number
}

const PAD = { left: 52, right: 14, top: 14, bottom: 28 }

/** A "nice" upper bound and step for an axis reaching `max`. */
export function niceScale(max: number, ticks = 4): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 1 }
  const raw = max / ticks
  const magnitude = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= raw) ?? 10 * magnitude
  const stepInt = Math.max(1, step)
  return { top: Math.ceil(max / stepInt) * stepInt, step: stepInt }
}

/** Short number for an axis: 1 200 → 1.2k. */
export function shortNumber(value: number): string {
  const abs = Math.abs(value)
  if (abs >= 1e6) return `${+(value / 1e6).toFixed(1)}M`
  if (abs >= 1e3) return `${+(value / 1e3).toFixed(1)}k`
  return String(+value.toFixed(2))
}

function frame(input: ChartInput, top: number, step: number, width: number, height: number, xOf: (index: number) => number): string[] {
  const plotH = height - PAD.top - PAD.bottom
  const plotW = width - PAD.left - PAD.right
  const parts: string[] = []
  for (let value = 0; value <= top + 1e-9; value += step) {
    const y = PAD.top + plotH - (value / top) * plotH
    parts.push(`<line class="grid" x1="${PAD.left}" x2="${PAD.left + plotW}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}"/>`)
    parts.push(`<text class="axis" x="${PAD.left - 8}" y="${(y + 4).toFixed(1)}" text-anchor="end">${shortNumber(value)}</text>`)
  }
  const n = input.labels.length
  const every = Math.max(1, Math.ceil(n / 8))
  input.labels.forEach((label, index) => {
    // Every `every`-th label, and the last one unless it would crowd the one before it.
    const last = index === n - 1 && (every === 1 || (n - 1) % every >= every / 2)
    if (index % every !== 0 && !last) return
    const x = xOf(index)
    parts.push(`<text class="axis" x="${x.toFixed(1)}" y="${height - 8}" text-anchor="middle">${escapeHtml(label)}</text>`)
  })
  return parts
}

function legend(series: readonly ChartSeries[]): string {
  return `<ul class="legend">${series.map((entry, index) => `<li><span class="swatch series-${index}"></span>${escapeHtml(entry.name)}</li>`).join('')}</ul>`
}

/** A stacked area chart (cumulative series read well stacked). */
export function stackedAreaChart(input: ChartInput): string {
  const width = input.width ?? 720
  const height = input.height ?? 240
  const n = input.labels.length
  const plotH = height - PAD.top - PAD.bottom
  const plotW = width - PAD.left - PAD.right
  const stacks = input.labels.map((_, index) => {
    let sum = 0
    return input.series.map((entry) => (sum += entry.values[index] ?? 0))
  })
  const max = Math.max(0, ...stacks.map((stack) => stack[stack.length - 1] ?? 0))
  const { top, step } = niceScale(max)
  const x = (index: number) => PAD.left + (n <= 1 ? plotW / 2 : (index / (n - 1)) * plotW)
  const y = (value: number) => PAD.top + plotH - (value / top) * plotH
  const parts = frame(input, top, step, width, height, x)
  // Draw from the top layer down so each lower band paints over the one above it.
  for (let s = input.series.length - 1; s >= 0; s--) {
    const upper = input.labels.map((_, index) => `${x(index).toFixed(1)},${y(stacks[index]![s]!).toFixed(1)}`)
    const lower = input.labels.map((_, index) => `${x(index).toFixed(1)},${y(s === 0 ? 0 : stacks[index]![s - 1]!).toFixed(1)}`).reverse()
    if (n === 1) {
      parts.push(`<circle class="dot series-${s}" cx="${x(0).toFixed(1)}" cy="${y(stacks[0]![s]!).toFixed(1)}" r="4"/>`)
      continue
    }
    parts.push(`<polygon class="area series-${s}" points="${[...upper, ...lower].join(' ')}"/>`)
    parts.push(`<polyline class="line series-${s}" points="${upper.join(' ')}"/>`)
  }
  return `<figure class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(input.title)}"><title>${escapeHtml(input.title)}</title>${parts.join('')}</svg>${legend(input.series)}</figure>`
}

/** Grouped bars, one group per label. */
export function barChart(input: ChartInput): string {
  const width = input.width ?? 720
  const height = input.height ?? 200
  const n = Math.max(1, input.labels.length)
  const plotH = height - PAD.top - PAD.bottom
  const plotW = width - PAD.left - PAD.right
  const max = Math.max(0, ...input.series.flatMap((entry) => entry.values))
  const { top, step } = niceScale(max)
  const slot = plotW / n
  // Bars sit in the middle of equal slots, so the first and last stay inside the plot.
  const xOf = (index: number) => PAD.left + slot * (index + 0.5)
  const parts = frame(input, top, step, width, height, xOf)
  const barW = Math.max(1, Math.min(28, (slot * 0.7) / Math.max(1, input.series.length)))
  input.labels.forEach((_, index) => {
    const center = xOf(index)
    const start = center - (barW * input.series.length) / 2
    input.series.forEach((entry, s) => {
      const value = entry.values[index] ?? 0
      const h = (value / top) * plotH
      parts.push(`<rect class="bar series-${s}" x="${(start + s * barW).toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"><title>${escapeHtml(`${entry.name}: ${value}`)}</title></rect>`)
    })
  })
  return `<figure class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(input.title)}"><title>${escapeHtml(input.title)}</title>${parts.join('')}</svg>${legend(input.series)}</figure>`
}

/**
 * Bucket epoch-day series into at most `maxBuckets` x positions (days, then weeks, then
 * months of 30 days), from the first to the last day with data.
 * @returns bucket start days and, per series, the sum over each bucket.
 */
export function bucketDays(points: readonly { day: number; values: readonly number[] }[], seriesCount: number, maxBuckets = 45): { starts: number[]; sums: number[][] } {
  if (points.length === 0) return { starts: [], sums: Array.from({ length: seriesCount }, () => []) }
  const first = points[0]!.day
  const last = points[points.length - 1]!.day
  const span = last - first + 1
  const width = span <= maxBuckets ? 1 : span <= maxBuckets * 7 ? 7 : Math.ceil(span / maxBuckets / 30) * 30
  const count = Math.ceil(span / width)
  const starts = Array.from({ length: count }, (_, index) => first + index * width)
  const sums = Array.from({ length: seriesCount }, () => new Array<number>(count).fill(0))
  for (const point of points) {
    const bucket = Math.floor((point.day - first) / width)
    point.values.forEach((value, s) => (sums[s]![bucket]! += value))
  }
  return { starts, sums }
}
