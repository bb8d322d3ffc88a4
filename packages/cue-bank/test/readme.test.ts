import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Config } from '../src/plugin.js'

/** Flatten the validated default config to dotted keys. */
function flatten(value: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (inner && typeof inner === 'object' && !Array.isArray(inner)) Object.assign(out, flatten(inner as Record<string, unknown>, path))
    else out[path] = inner
  }
  return out
}

describe('README config table', () => {
  it('lists every Config field with the schema default, and nothing else', () => {
    const defaults = flatten((Config as unknown as (input: unknown) => Record<string, unknown>)({}))
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const rows = new Map<string, string>()
    for (const match of readme.matchAll(/^\| `([\w.]+)` \| `([^`]*)` \|/gm)) rows.set(match[1]!, match[2]!)
    expect([...rows.keys()].sort()).toEqual(Object.keys(defaults).sort())
    for (const [key, value] of Object.entries(defaults)) {
      expect(rows.get(key), key).toBe(typeof value === 'string' ? `'${value}'` : String(value))
    }
  })

  it('matches the bundle patch defaults', () => {
    // The patch is plain nested `key: value` YAML; read the memory-cue-bank row's config by indentation.
    const patch = readFileSync(new URL('../cordis.patch.yml', import.meta.url), 'utf8')
    const lines = patch.split('\n')
    const start = lines.findIndex((line) => line.includes("name: '@dsh-memory/cue-bank/plugin'"))
    const configLine = lines.findIndex((line, index) => index > start && line.trim() === 'config:')
    const base = lines[configLine]!.search(/\S/)
    const found: Record<string, string> = {}
    const stack: { indent: number; key: string }[] = []
    for (const line of lines.slice(configLine + 1)) {
      if (!line.trim() || line.trim().startsWith('#')) continue
      const indent = line.search(/\S/)
      if (indent <= base) break
      const [, key, value] = /^\s*([\w]+):\s*(.*)$/.exec(line)!
      while (stack.length && stack.at(-1)!.indent >= indent) stack.pop()
      const path = [...stack.map((entry) => entry.key), key].join('.')
      if (value === '') stack.push({ indent, key: key! })
      else found[path] = value!.replace(/^'(.*)'$/, '$1')
    }
    const defaults = flatten((Config as unknown as (input: unknown) => Record<string, unknown>)({}))
    expect(Object.keys(found).sort()).toEqual(Object.keys(defaults).sort())
    for (const [key, value] of Object.entries(defaults)) expect(found[key], key).toBe(String(value))
  })
})
