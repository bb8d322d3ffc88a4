/**
 * A workspace is its project, not its path: two clones of one git remote (on two machines, or
 * at two paths of one machine) are one workspace, so a team's hosts share its memory. The id
 * of a directory inside a git work tree with a remote is the normalized remote URL
 * (`git:<host>/<owner>/<repo>`); anywhere else it is the directory's path, as before.
 *
 * Pure apart from file reads: no `git` process (a host must not fork per session, and git may
 * be missing), no network. The repository's `config` is read with a small reader of git's
 * config syntax (sections, subsections, quoting, escapes, comments, continuation lines): the
 * only thing taken from it is `remote.<name>.url`, and a general INI parser gets git's
 * `[remote "origin"]` subsections and its escapes wrong.
 */
import { readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { MemoryStoreError } from './errors.ts'

/** How a session's directory becomes a workspace id. */
export type WorkspaceIdentity = 'git-remote' | 'path'

/** The identities {@link workspaceOf} knows, for option checks. */
export const WORKSPACE_IDENTITIES: readonly WorkspaceIdentity[] = Object.freeze(['git-remote', 'path'])

/** The prefix of every git-derived workspace id. */
export const GIT_WORKSPACE_PREFIX = 'git:'

/** Options of {@link workspaceOf}. */
export interface WorkspaceOfOptions {
  /** `'git-remote'` (default): the project's remote when there is one; `'path'`: always the path. */
  readonly identity?: WorkspaceIdentity
}

/**
 * The workspace id of a session directory. `''` stays `''` (a session without a workspace).
 * With `identity: 'git-remote'` (the default), a directory inside a git work tree whose
 * repository has a remote (`origin`, else the first one configured) gets
 * `git:<host>/<path>` (see {@link normalizeRemoteUrl}); otherwise, and with
 * `identity: 'path'`, the id is `cwd` itself. Credentials in the remote URL are never part of
 * the id. Never throws for an unreadable repository: it falls back to the path.
 * @throws MemoryStoreError `invalid-argument` for an unknown identity
 */
export function workspaceOf(cwd: string, options: WorkspaceOfOptions = {}): string {
  const identity = options.identity ?? 'git-remote'
  if (!WORKSPACE_IDENTITIES.includes(identity)) {
    throw new MemoryStoreError('invalid-argument', `workspaceIdentity must be one of ${WORKSPACE_IDENTITIES.join(', ')}, got ${JSON.stringify(identity)}`, { path: 'workspaceIdentity' })
  }
  if (identity === 'path' || typeof cwd !== 'string' || cwd === '' || !isAbsolute(cwd)) return cwd
  try {
    const repository = findRepository(cwd)
    if (!repository) return cwd
    const url = remoteUrl(readFileSync(join(repository.commonDir, 'config'), 'utf8'))
    if (url === undefined) return cwd
    return normalizeRemoteUrl(url, repository.workTree) ?? cwd
  } catch {
    // A half-written or unreadable .git is not this function's to report: the path still works.
    return cwd
  }
}

/** True for an id {@link workspaceOf} derived from a git remote. */
export function isGitWorkspace(id: string): boolean {
  return id.startsWith(GIT_WORKSPACE_PREFIX)
}

interface Repository {
  /** The work tree's top directory (where `.git` is). */
  readonly workTree: string
  /** The directory holding the shared `config` (a worktree's `commondir`, else the git dir). */
  readonly commonDir: string
}

/** Walk up from `start` to the first directory with a `.git` (a directory, or a `gitdir:` file). */
function findRepository(start: string): Repository | undefined {
  if (!isDirectory(start)) return undefined
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    const dotGit = join(dir, '.git')
    const gitDir = isDirectory(dotGit) ? dotGit : gitDirOfFile(dotGit)
    if (gitDir) return { workTree: dir, commonDir: commonDirOf(gitDir) }
    if (dirname(dir) === dir) return undefined
  }
}

/** A worktree's or submodule's `.git` file: `gitdir: <path>`, relative to the file's directory. */
function gitDirOfFile(file: string): string | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
  const match = /^gitdir:\s*(.+?)\s*$/m.exec(text)
  if (!match?.[1]) return undefined
  const gitDir = resolve(dirname(file), match[1])
  return isDirectory(gitDir) ? gitDir : undefined
}

/** A linked worktree's git dir names the main repository's in `commondir`; its `config` is there. */
function commonDirOf(gitDir: string): string {
  try {
    const common = readFileSync(join(gitDir, 'commondir'), 'utf8').trim()
    if (common) return resolve(gitDir, common)
  } catch {
    // No commondir: the git dir is the repository's own.
  }
  return gitDir
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * The URL of the remote that names the project: `origin`, else the first remote with a url, in
 * the order the config lists them. Exported for tests.
 */
export function remoteUrl(config: string): string | undefined {
  const urls = new Map<string, string>()
  for (const entry of readGitConfig(config)) {
    if (entry.section !== 'remote' || entry.subsection === undefined || entry.key !== 'url' || entry.value === '') continue
    // The first url of a remote is the fetch URL (later ones are extra push URLs).
    if (!urls.has(entry.subsection)) urls.set(entry.subsection, entry.value)
  }
  return urls.get('origin') ?? urls.values().next().value
}

/** One `key = value` of a git config file; section and key lower-cased, subsection as written. */
export interface GitConfigEntry {
  readonly section: string
  readonly subsection: string | undefined
  readonly key: string
  readonly value: string
}

/**
 * Read git's config syntax: `[section]`, `[section "sub"]` (quoted, case-sensitive), the old
 * `[section.sub]` form, `key = value` with `"…"` quoting, `\\ \" \n \t \b` escapes, `#`/`;`
 * comments outside quotes and `\` line continuation. A key without `=` is boolean true.
 * Lines it cannot read are skipped (git would refuse the file; the path id serves then).
 */
export function readGitConfig(text: string): GitConfigEntry[] {
  const entries: GitConfigEntry[] = []
  const lines = text.split(/\r?\n/)
  let section = ''
  let subsection: string | undefined
  for (let index = 0; index < lines.length; index++) {
    const line = (lines[index] ?? '').trimStart()
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    if (line.startsWith('[')) {
      const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line)
      if (!header?.[1]) {
        section = ''
        continue
      }
      const name = header[1]
      if (header[2] !== undefined) {
        section = name.toLowerCase()
        subsection = header[2].replace(/\\(.)/g, '$1')
      } else {
        const dot = name.indexOf('.')
        section = (dot < 0 ? name : name.slice(0, dot)).toLowerCase()
        subsection = dot < 0 ? undefined : name.slice(dot + 1).toLowerCase()
      }
      // `[section] key = value` on the header line is valid git config.
      const rest = line.slice(header[0].length).trim()
      if (rest === '' || rest.startsWith('#') || rest.startsWith(';')) continue
      lines[index] = rest
      index--
      continue
    }
    const key = /^([A-Za-z][A-Za-z0-9-]*)\s*(=?)/.exec(line)
    if (!key?.[1] || section === '') continue
    if (key[2] !== '=') {
      entries.push({ section, subsection, key: key[1].toLowerCase(), value: 'true' })
      continue
    }
    let raw = line.slice(key[0].length)
    // Continuation: a value ending in an unescaped backslash goes on with the next line.
    while (/(^|[^\\])(\\\\)*\\$/.test(raw) && index + 1 < lines.length) raw = raw.slice(0, -1) + (lines[++index] ?? '')
    entries.push({ section, subsection, key: key[1].toLowerCase(), value: configValue(raw) })
  }
  return entries
}

/** A config value: quotes removed, escapes applied, a comment outside quotes cut, outer blanks trimmed. */
function configValue(raw: string): string {
  let value = ''
  let quoted = false
  // Blanks outside quotes are kept only between words, as git does.
  let pendingBlank = ''
  for (let i = 0; i < raw.length; i++) {
    const char = raw[i] as string
    if (char === '\\' && i + 1 < raw.length) {
      const next = raw[++i] as string
      value += pendingBlank + ({ n: '\n', t: '\t', b: '\b' }[next] ?? next)
      pendingBlank = ''
    } else if (char === '"') {
      quoted = !quoted
      value += pendingBlank
      pendingBlank = ''
    } else if (!quoted && (char === '#' || char === ';')) {
      break
    } else if (!quoted && (char === ' ' || char === '\t')) {
      if (value !== '') pendingBlank += char
    } else {
      value += pendingBlank + char
      pendingBlank = ''
    }
  }
  return value
}

/**
 * The project id of a remote URL: `git:<host>/<path>` with the host lower-cased and the user,
 * password, port, a trailing `/` and `.git` dropped, so `git@github.com:o/r.git`,
 * `ssh://git@github.com:22/o/r`, `https://user:token@GitHub.com/o/r.git` and
 * `git://github.com/o/r` are all `git:github.com/o/r`. A local remote (`file://…`, an absolute
 * path, or a path relative to `workTree`) is `git:<its absolute path>` (`git:/srv/git/r`):
 * clones of one local repository share it. Undefined for what is no git URL (the caller keeps
 * the directory's path).
 */
export function normalizeRemoteUrl(url: string, workTree: string): string | undefined {
  const trimmed = url.trim()
  if (trimmed === '') return undefined
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(trimmed)
  if (scheme?.[1]) {
    const protocol = scheme[1].toLowerCase()
    if (protocol === 'file') return localId(decodeSafely(trimmed.slice('file://'.length).replace(/^[^/]*/, '')) || '/')
    let parsed: URL
    try {
      // URL() parses only special schemes' hosts reliably; give every scheme https's rules.
      parsed = new URL(`https://${trimmed.slice(scheme[0].length)}`)
    } catch {
      return undefined
    }
    if (!parsed.hostname) return undefined
    return remoteId(parsed.hostname, decodeSafely(parsed.pathname))
  }
  // scp-like syntax: [user@]host:path, when a colon comes before any slash (git's own rule).
  const scp = /^(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+):(.*)$/.exec(trimmed)
  if (scp?.[1] && scp[2] !== undefined && !/^[A-Za-z]$/.test(scp[1])) return remoteId(scp[1].replace(/^\[|\]$/g, ''), scp[2])
  return localId(isAbsolute(trimmed) ? trimmed : resolve(workTree, trimmed))
}

function remoteId(host: string, path: string): string | undefined {
  const cleaned = cleanPath(path.replace(/^\/?~[^/]*\//, '/'))
  if (cleaned === '') return undefined
  return `${GIT_WORKSPACE_PREFIX}${host.toLowerCase()}/${cleaned}`
}

function localId(path: string): string {
  return `${GIT_WORKSPACE_PREFIX}/${cleanPath(resolve(path))}`
}

/** `/o/r.git/` → `o/r`: no leading or trailing slash, no `.git`, no empty segments. */
function cleanPath(path: string): string {
  return path
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .join('/')
    .replace(/\.git$/i, '')
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
