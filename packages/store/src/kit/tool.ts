/**
 * One way to define a model tool's input: a zod schema validates what the model sent, and the
 * JSON Schema the model sees is generated from the same schema by zod's `z.toJSONSchema`, so
 * the two never drift apart and no package hand-writes JSON Schema.
 */
import { z } from 'zod'

/** A JSON Schema object, as the host's tool registry takes it. */
export type JsonSchema = Record<string, unknown>

/**
 * The JSON Schema of a tool's input schema, as plain JSON: no `$schema` key, no undefined
 * members or null-prototype objects (the host snapshots schemas as lossless JSON and rejects
 * those). Describes the input side: what the model may send, fields with defaults optional.
 */
export function toolParameters(schema: z.ZodType): JsonSchema {
  return plainJsonSchema(schema, 'input')
}

/**
 * The JSON Schema of what a tool returns (the host's mandatory `output.schema`), as plain JSON
 * in the subset the host enforces on outputs: `type`, `properties`, `required`, boolean
 * `additionalProperties`, `items`, `enum`, `const`, `oneOf` and annotations. Bounds zod adds
 * (`minimum`, `maxLength`, …) are dropped, and "anything more" (`{}`) becomes `true`.
 */
export function toolOutput(schema: z.ZodType): JsonSchema {
  return outputSubset(plainJsonSchema(schema, 'output')) as JsonSchema
}

const OUTPUT_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'oneOf', 'description', 'title', 'default', 'examples'])

function outputSubset(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(outputSubset)
  if (node === null || typeof node !== 'object') return node
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (!OUTPUT_KEYWORDS.has(key)) continue
    if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([name, child]) => [name, outputSubset(child)]))
    else if (key === 'additionalProperties') out[key] = typeof value === 'boolean' ? value : true
    else if (key === 'items' || key === 'oneOf') out[key] = outputSubset(value)
    else out[key] = value
  }
  return out
}

function plainJsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema
  delete generated.$schema
  return JSON.parse(JSON.stringify(generated)) as JsonSchema
}

/** The result of {@link parseToolInput}. */
export type ToolInputResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly path: string; readonly message: string }

/**
 * Validate what the model sent against `schema`. On failure `path` names the first bad field
 * (`arguments` for the whole object) and `message` lists every issue as `path: problem`.
 */
export function parseToolInput<S extends z.ZodType>(schema: S, raw: unknown): ToolInputResult<z.output<S>> {
  const parsed = schema.safeParse(raw ?? {})
  if (parsed.success) return { ok: true, value: parsed.data }
  const issues = parsed.error.issues.map((issue) => ({ path: issuePath(issue.path), message: issue.message }))
  return { ok: false, path: issues[0]?.path ?? 'arguments', message: issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ') }
}

function issuePath(path: readonly PropertyKey[]): string {
  return path.length > 0 ? path.map(String).join('.') : 'arguments'
}
