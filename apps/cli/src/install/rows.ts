/**
 * Which loader rows an installed package adds, read from its own bundle patch, and whether
 * the host's composed config (`dsh --dump-config`) lists them. Reading the patch rather than
 * keeping a list here means a plugin that gains a row is verified without touching this file.
 */
import { parse } from 'yaml'

/** A row id and the module it loads. */
export interface LoaderRow {
  readonly id: string
  readonly name: string
}

/**
 * Every row a bundle patch inserts, group children included (the preset's one group row holds
 * a row per plugin).
 */
export function bundleRows(patchText: string): LoaderRow[] {
  const rows: LoaderRow[] = []
  const visit = (value: unknown) => {
    if (!Array.isArray(value)) return
    for (const entry of value) {
      if (!entry || typeof entry !== 'object') continue
      const record = entry as { id?: unknown; name?: unknown; insert?: unknown; config?: unknown; group?: unknown }
      if (record.insert !== undefined) visit(record.insert)
      if (typeof record.id === 'string') rows.push({ id: record.id, name: typeof record.name === 'string' ? record.name : '' })
      if (record.group === true) visit(record.config)
    }
  }
  visit(parse(patchText, { logLevel: 'error' }) as unknown)
  return rows
}

/** Row ids that appear in `dsh --dump-config` output (a YAML tree of rows). */
export function dumpedRowIds(dump: string): Set<string> {
  const ids = new Set<string>()
  for (const match of dump.matchAll(/^[\s-]*id:\s*['"]?([^'"\s#]+)/gm)) ids.add(match[1]!)
  return ids
}

/** The rows of `expected` the dump does not list. */
export function missingRows(expected: readonly LoaderRow[], dump: string): LoaderRow[] {
  const present = dumpedRowIds(dump)
  return expected.filter((row) => !present.has(row.id))
}
