import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DEFAULT_PALACE_OPTIONS } from '../src/index.js'
import { Config } from '../src/plugin.js'

const packageDir = join(import.meta.dirname, '..')

describe('docs and bundle patch agree with the Config schema', () => {
  const defaults = Config({}) as unknown as Record<string, unknown>

  it('the schema defaults are the core defaults', () => {
    expect(defaults).toEqual({ ...DEFAULT_PALACE_OPTIONS })
  })

  it('the README config table lists every field with its default', () => {
    const readme = readFileSync(join(packageDir, 'README.md'), 'utf8')
    const rows = new Map([...readme.matchAll(/^\| `(\w+)` \| [^|]+ \| `([^`]*)` \|/gm)].map((match) => [match[1]!, match[2]!]))
    expect([...rows.keys()].sort()).toEqual(Object.keys(defaults).sort())
    for (const [field, value] of Object.entries(defaults)) expect([field, rows.get(field)]).toEqual([field, String(value)])
  })

  it('the bundle patch mounts the store row and the palace row with the full default config', () => {
    const patch = readFileSync(join(packageDir, 'cordis.patch.yml'), 'utf8')
    expect(patch).toMatch(/- id: memory-palace-store\n\s+name: '@dsh-memory\/store\/plugin'\n\s+config:\n\s+dataDir: ''/)
    expect(patch).toMatch(/- id: memory-palace\n\s+name: '@dsh-memory\/palace\/plugin'/)
    const block = patch.slice(patch.indexOf('- id: memory-palace\n'))
    const config = Object.fromEntries(
      [...block.matchAll(/^ {8}(\w+): (.+)$/gm)].map(([, key, raw]) => [key!, raw === 'true' ? true : raw === 'false' ? false : /^-?\d+(\.\d+)?$/.test(raw!) ? Number(raw) : raw!]),
    )
    expect(config).toEqual(defaults)
  })
})
