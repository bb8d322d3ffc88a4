import { describe, expect, it } from 'vitest'
import { barChart, bucketDays, escapeHtml, html, isLoopback, niceScale, raw, shortNumber, stackedAreaChart, translator } from '../src/index.ts'

describe('html', () => {
  it('escapes every interpolation unless it is trusted markup', () => {
    const hostile = `<script>alert("x")</script> & 'quotes' \``
    const out = html`<p title="${hostile}">${hostile}${raw('<b>ok</b>')}${[1, null, false, 'a<b']}</p>`.value
    expect(out).not.toContain('<script>')
    expect(out).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;quotes&#39; &#96;')
    expect(out).toContain('<b>ok</b>')
    expect(out).toContain('1a&#60;b')
    expect(escapeHtml('"<>&')).toBe('&#34;&#60;&#62;&#38;')
  })
})

describe('charts', () => {
  it('picks nice axis bounds', () => {
    expect(niceScale(0)).toEqual({ top: 1, step: 1 })
    expect(niceScale(19)).toEqual({ top: 20, step: 5 })
    expect(niceScale(2_910)).toEqual({ top: 3_000, step: 1_000 })
    expect(shortNumber(1_200)).toBe('1.2k')
    expect(shortNumber(2_500_000)).toBe('2.5M')
  })

  it('buckets days by day, week or month so the x axis stays short', () => {
    const daily = bucketDays([{ day: 100, values: [1, 2] }, { day: 102, values: [3, 4] }], 2)
    expect(daily.starts).toEqual([100, 101, 102])
    expect(daily.sums).toEqual([[1, 0, 3], [2, 0, 4]])
    const long = bucketDays(Array.from({ length: 400 }, (_, i) => ({ day: 1_000 + i, values: [1] })), 1, 45)
    expect(long.starts.length).toBeLessThanOrEqual(45)
    expect(long.sums[0]!.reduce((a, b) => a + b, 0)).toBe(400)
    expect(bucketDays([], 3)).toEqual({ starts: [], sums: [[], [], []] })
  })

  it('draws SVG with escaped labels and one shape per series', () => {
    const area = stackedAreaChart({ title: 'T<x>', labels: ['a', 'b', 'c'], series: [{ name: 'one', values: [1, 2, 3] }, { name: '<two>', values: [0, 1, 1] }] })
    expect(area).toContain('<svg')
    expect(area.match(/<polygon class="area/g)).toHaveLength(2)
    expect(area).toContain('&#60;two&#62;')
    expect(area).not.toContain('<two>')
    const bars = barChart({ title: 'B', labels: ['x', 'y'], series: [{ name: 's', values: [5, 10] }] })
    expect(bars.match(/<rect class="bar/g)).toHaveLength(2)
  })
})

describe('options and strings', () => {
  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost']) expect(isLoopback(host), host).toBe(true)
    for (const host of ['0.0.0.0', '192.168.1.2', '::', 'example.com']) expect(isLoopback(host), host).toBe(false)
  })

  it('has every UI string in both languages', () => {
    expect(translator('zh')('memories')).toBe('记忆')
    expect(translator('en')('memories')).toBe('Memories')
  })
})
