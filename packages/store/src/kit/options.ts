/**
 * Unknown option keys are rejected everywhere: a typo in a profile's `cordis.patch.yml`
 * (`maxResult: 3`) must fail loudly with the path of the bad key instead of being ignored. The
 * host's schemastery `Config` passes unknown keys through, so each plugin's core checks its
 * input against one strict zod schema of its option keys, derived from its defaults.
 */
import { z } from 'zod'

/** The known keys of a plugin's options: `true` for a value, a nested shape for a section. */
export type OptionKeys = { readonly [key: string]: true | OptionKeys }

/**
 * The keys of `defaults`: a nested plain object is a section whose keys count too; anything
 * else (arrays, strings, numbers) is a value. `extra` adds keys the defaults leave out.
 */
export function optionKeysOf(defaults: object, extra: OptionKeys = {}): OptionKeys {
  const keys: Record<string, true | OptionKeys> = {}
  for (const [key, value] of Object.entries(defaults)) keys[key] = isPlainObject(value) ? optionKeysOf(value) : true
  for (const [key, value] of Object.entries(extra)) {
    const known = keys[key]
    keys[key] = value !== true && known !== undefined && known !== true ? { ...known, ...value } : value
  }
  return keys
}

/**
 * The strict zod schema of `keys`: every key optional, any value for a value key, a nested
 * strict object for a section, and an `unrecognized_keys` issue for anything else.
 */
export function strictOptionsSchema(keys: OptionKeys): z.ZodType {
  const shape: Record<string, z.ZodType> = {}
  for (const [key, value] of Object.entries(keys)) shape[key] = value === true ? z.unknown().optional() : strictOptionsSchema(value).nullish()
  return z.strictObject(shape)
}

/** What {@link findUnknownOption} reports: the dotted path of the bad key and why. */
export interface OptionKeyIssue {
  readonly path: string
  readonly message: string
}

/**
 * The first key of `input` that `schema` (see {@link strictOptionsSchema}) does not know, or a
 * section that is not an object; undefined when every key is known.
 */
export function findUnknownOption(input: unknown, schema: z.ZodType): OptionKeyIssue | undefined {
  const result = schema.safeParse(input ?? {})
  if (result.success) return undefined
  const issues = result.error.issues
  const issue = issues.find((candidate) => candidate.code === 'unrecognized_keys') ?? issues[0]!
  if (issue.code === 'unrecognized_keys') {
    const path = [...issue.path.map(String), issue.keys[0]!].join('.')
    return { path, message: `unknown option${issue.keys.length > 1 ? `s ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}` : ''} (check the spelling; see the package README for the options)` }
  }
  return { path: issue.path.map(String).join('.') || '(root)', message: 'must be an object of options' }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}
