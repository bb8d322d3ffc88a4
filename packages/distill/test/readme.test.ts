import { readFileSync } from 'node:fs'
import { estimateTokens } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { DEDUP_SYSTEM, L1_SYSTEM } from '../src/core/prompts.js'
import { Config } from '../src/plugin.js'

function flatten(value: Record<string, unknown>, prefix = ''): [string, unknown][] {
  return Object.entries(value).flatMap(([key, child]) =>
    child && typeof child === 'object' && !Array.isArray(child) ? flatten(child as Record<string, unknown>, `${prefix}${key}.`) : [[`${prefix}${key}`, child] as [string, unknown]],
  )
}

describe('README', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  const rows = new Map([...readme.matchAll(/^\| `([a-zA-Z0-9.]+)` \| `([^`]*)` \|/gm)].map((match) => [match[1]!, match[2]!]))

  it('documents every config field with the schema default', () => {
    const defaults = flatten((Config as unknown as (input: unknown) => Record<string, unknown>)({}))
    expect([...rows.keys()].sort()).toEqual(defaults.map(([key]) => key).sort())
    for (const [key, value] of defaults) {
      const shown = typeof value === 'string' ? `'${value}'` : JSON.stringify(value)
      expect(rows.get(key), key).toBe(shown)
    }
  })

  it('states the L1 system prompt size it ships', () => {
    expect(estimateTokens(L1_SYSTEM)).toBeLessThanOrEqual(300)
    expect(estimateTokens(DEDUP_SYSTEM)).toBeLessThanOrEqual(250)
  })
})
