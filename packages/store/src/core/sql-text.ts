/**
 * A bridge for packages whose queries were written as SQL text with `?` placeholders before
 * the extension seam existed (tree, cue-bank): it runs that text through drizzle on the
 * session's database handle, values always bound as parameters, so those packages could move
 * onto the store's connection without rewriting every query at once. New queries should use
 * drizzle's query builder on the schema instead.
 */
import { type SQL, sql } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import type { PackageDatabase } from './package-tables.ts'

/** What a write statement changed. */
export interface StatementResult {
  /** Rows inserted, updated or deleted. */
  readonly changes: number
  /** Row id of the last inserted row (0 when none). */
  readonly lastInsertRowid: number
}

/** One SQL text with `?` placeholders, runnable with its parameters. */
export interface TextStatement {
  get<T>(...params: unknown[]): T | undefined
  all<T>(...params: unknown[]): T[]
  run(...params: unknown[]): StatementResult
}

/** Statements over a package's database handle (use only inside a `read`/`write` callback). */
export interface TextStatements {
  prepare(text: string): TextStatement
}

/**
 * Build a drizzle statement from `?`-placeholder text and its parameters.
 * @throws MemoryStoreError `invalid-argument` when the placeholder count and the parameters differ
 */
export function sqlFromText(text: string, params: readonly unknown[]): SQL {
  const parts = text.split('?')
  if (parts.length - 1 !== params.length) {
    throw new MemoryStoreError('invalid-argument', `statement has ${parts.length - 1} placeholders but ${params.length} parameters: ${text.slice(0, 120)}`)
  }
  const chunks: SQL[] = []
  parts.forEach((part, index) => {
    chunks.push(sql.raw(part))
    if (index < params.length) chunks.push(sql`${params[index]}`)
  })
  return sql.join(chunks)
}

/** {@link TextStatements} over `db`. */
export function textStatements(db: PackageDatabase<Record<string, unknown>>): TextStatements {
  return {
    prepare: (text) => ({
      get: <T>(...params: unknown[]) => db.get<T>(sqlFromText(text, params)) ?? undefined,
      all: <T>(...params: unknown[]) => db.all<T>(sqlFromText(text, params)),
      run: (...params: unknown[]) => {
        const result = db.run(sqlFromText(text, params))
        return { changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) }
      },
    }),
  }
}
