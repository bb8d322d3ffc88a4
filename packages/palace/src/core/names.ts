import { createHash } from 'node:crypto'
import { basename, isAbsolute, normalize, relative, resolve, sep } from 'node:path'
import { PalaceError } from './errors.js'

/** Longest memory name (namespace folder), as the reference allows. */
export const MAX_NAMESPACE_LENGTH = 32
/** Longest category name. */
export const MAX_CATEGORY_LENGTH = 40

// Windows refuses these as file names whatever the extension; a palace must stay portable
// because workspaces are shared through git and synced folders.
const WINDOWS_DEVICE_NAMES = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i

/**
 * Check a memory name (the namespace folder): ASCII letters (either case), digits, space,
 * `_` and `-`, 1–32 characters, no leading or trailing space. Chinese and path separators
 * are refused, as in the reference.
 * @returns the name unchanged.
 * @throws PalaceError `invalid-name` saying what is wrong.
 */
export function validateNamespace(name: unknown): string {
  if (typeof name !== 'string') throw new PalaceError('invalid-name', `a memory name must be a string, got ${typeof name}`)
  if (name.length === 0) throw new PalaceError('invalid-name', 'a memory name must not be empty')
  if (name.length > MAX_NAMESPACE_LENGTH) {
    throw new PalaceError('invalid-name', `memory name ${JSON.stringify(name)} is ${name.length} characters; at most ${MAX_NAMESPACE_LENGTH} are allowed`)
  }
  if (name !== name.trim()) throw new PalaceError('invalid-name', `memory name ${JSON.stringify(name)} must not start or end with a space`)
  if (/[\\/]/.test(name) || name.includes('..')) {
    throw new PalaceError('invalid-name', `memory name ${JSON.stringify(name)} contains a path separator or ".."; use English letters, digits, space, "_" or "-"`)
  }
  const bad = [...name].find((ch) => !/[A-Za-z0-9 _-]/.test(ch))
  if (bad !== undefined) {
    const what = bad === '/' || bad === '\\' ? 'a path separator' : bad === '.' ? '"."' : JSON.stringify(bad)
    throw new PalaceError('invalid-name', `memory name ${JSON.stringify(name)} contains ${what}; use English letters, digits, space, "_" or "-"`)
  }
  if (WINDOWS_DEVICE_NAMES.test(name)) throw new PalaceError('invalid-name', `memory name ${JSON.stringify(name)} is a reserved device name on Windows`)
  return name
}

/** True when {@link validateNamespace} accepts `name`. */
export function isValidNamespace(name: unknown): name is string {
  try {
    validateNamespace(name)
    return true
  } catch {
    return false
  }
}

/** Longest workspace part of an automatic memory name, so the hash and a `-NN` suffix still fit in 32. */
const AUTO_SLUG_LENGTH = 20

/**
 * The automatic memory name of a session that was never named: the workspace folder's name
 * as ASCII (`shop-api`; full-width letters and accents folded, anything else a `-`), or
 * `session` when nothing ASCII is left (a folder named `项目` or `プロジェクト`), then 8 hex
 * characters of a hash of the session id, so two sessions of one workspace never share a
 * name. `attempt` > 0 appends `-2`, `-3`, … for the rare clash with a name already taken.
 * Always a valid name ({@link validateNamespace}).
 */
export function automaticNamespace(workspace: string, sessionId: string, attempt = 0): string {
  const ascii = basename(workspace)
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .slice(0, AUTO_SLUG_LENGTH)
    .replace(/^-+|-+$/g, '')
  const hash = createHash('sha256').update(sessionId).digest('hex').slice(0, 8)
  return validateNamespace(`${ascii || 'session'}-${hash}${attempt > 0 ? `-${attempt + 1}` : ''}`)
}

/**
 * Check a category name: letters of any script (so `事故教訓` works), digits, space, `_`, `-`,
 * 1–40 characters, no leading/trailing space, nothing that acts as a path.
 * @returns the name unchanged.
 * @throws PalaceError `invalid-name`
 */
export function validateCategory(name: unknown): string {
  if (typeof name !== 'string') throw new PalaceError('invalid-name', `a category must be a string, got ${typeof name}`)
  const normalized = name.normalize('NFC')
  if (normalized.length === 0) throw new PalaceError('invalid-name', 'a category must not be empty')
  if (normalized.length > MAX_CATEGORY_LENGTH) {
    throw new PalaceError('invalid-name', `category ${JSON.stringify(name)} is longer than ${MAX_CATEGORY_LENGTH} characters`)
  }
  if (normalized !== normalized.trim()) throw new PalaceError('invalid-name', `category ${JSON.stringify(name)} must not start or end with a space`)
  if (/[\\/]/.test(normalized) || normalized.includes('..')) {
    throw new PalaceError('invalid-name', `category ${JSON.stringify(name)} contains a path separator or ".."; a category is one folder name`)
  }
  const bad = [...normalized].find((ch) => !/[\p{L}\p{M}\p{N} _-]/u.test(ch))
  if (bad !== undefined) {
    const what = bad === '/' || bad === '\\' ? 'a path separator' : JSON.stringify(bad)
    throw new PalaceError('invalid-name', `category ${JSON.stringify(name)} contains ${what}; use letters, digits, space, "_" or "-"`)
  }
  if (WINDOWS_DEVICE_NAMES.test(normalized)) throw new PalaceError('invalid-name', `category ${JSON.stringify(name)} is a reserved device name on Windows`)
  return normalized
}

/**
 * Check a volume file-name prefix (`selfName`): lower-case ASCII letters, digits and `-`,
 * 1–32 characters. Upper case is folded so `Claude` and `claude` name the same files.
 * @throws PalaceError `invalid-name`
 */
export function validateSelfName(name: unknown): string {
  if (typeof name !== 'string') throw new PalaceError('invalid-name', `selfName must be a string, got ${typeof name}`)
  const slug = name.trim().toLowerCase()
  if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(slug)) {
    throw new PalaceError('invalid-name', `selfName ${JSON.stringify(name)} must be 1–32 letters, digits or "-" (it becomes part of a file name)`)
  }
  return slug
}

/**
 * Resolve a caller-supplied relative path inside `root`, refusing anything that could
 * leave it: absolute paths, drive letters, `..` segments, NUL bytes, and backslash tricks.
 * @returns the absolute path inside `root`.
 * @throws PalaceError `path-refused`
 */
export function resolveInside(root: string, untrusted: string): string {
  if (typeof untrusted !== 'string' || untrusted.length === 0) throw new PalaceError('path-refused', 'path must be a non-empty string')
  if (untrusted.includes('\0')) throw new PalaceError('path-refused', 'path contains a NUL byte')
  if (isAbsolute(untrusted) || /^[A-Za-z]:/.test(untrusted) || untrusted.startsWith('\\') || untrusted.startsWith('~')) {
    throw new PalaceError('path-refused', `absolute paths are refused: ${JSON.stringify(untrusted)}; give a path relative to the palace`)
  }
  const segments = untrusted.split(/[\\/]+/)
  if (segments.some((segment) => segment === '..')) {
    throw new PalaceError('path-refused', `path ${JSON.stringify(untrusted)} climbs out with ".."`)
  }
  const target = resolve(root, normalize(segments.filter((segment) => segment !== '' && segment !== '.').join(sep)))
  const rel = relative(root, target)
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new PalaceError('path-refused', `path ${JSON.stringify(untrusted)} does not name a file inside the palace`)
  }
  return target
}

/** True when `child` is `parent` or inside it (both absolute, already resolved). */
export function isInside(parent: string, child: string): boolean {
  const rel = relative(parent, child)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}
