/**
 * What an `import` path is, and where its memories belong: format detection, and the scope and
 * workspace of instruction files (a user-level Claude file is global; a project's `CLAUDE.md`
 * belongs to the project folder; Claude Code's auto memory lives in
 * `~/.claude/projects/<slug>/memory/`, the slug being the project path with `/` turned into `-`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, extname, join, relative, resolve, sep } from 'node:path'
import { isGitWorkspace } from '@dsh-memory/store'
import { isReferenceTreeRoot } from '@dsh-memory/tree'
import { CliUsageError } from '../io.ts'

/** Formats `import` reads. */
export type ImportFormat = 'jsonl' | 'instructions' | 'cue-bank' | 'palace' | 'memory-tree'

/** The formats, for `--format`. */
export const IMPORT_FORMATS: readonly ImportFormat[] = ['jsonl', 'instructions', 'cue-bank', 'palace', 'memory-tree']

const INSTRUCTION_NAMES = /^(claude|claude\.local|agents|memory)\.md$/i

/** Guess the format of a path. @throws CliUsageError when it cannot tell */
export function detectFormat(path: string): ImportFormat {
  if (!existsSync(path)) throw new CliUsageError(`cannot read ${path}: no such file or directory`)
  if (statSync(path).isDirectory()) {
    if (basename(path) === 'memory-palace' || existsSync(join(path, '.namespaces.json')) || existsSync(join(path, 'memory-palace'))) return 'palace'
    if (isReferenceTreeRoot(path)) return 'memory-tree'
    if (readdirSync(path).some((name) => name.toLowerCase().endsWith('.md'))) return 'instructions'
    throw new CliUsageError(`${path} is a folder but neither a memory palace, a memory-tree root nor a folder of Markdown memory files; pass --format`)
  }
  const extension = extname(path).toLowerCase()
  if (extension === '.jsonl') return 'jsonl'
  if (extension === '.md' || extension === '.markdown' || INSTRUCTION_NAMES.test(basename(path))) return 'instructions'
  const head = readFileSync(path, 'utf8').slice(0, 4096).trimStart()
  const firstLine = head.split('\n', 1)[0] ?? ''
  try {
    const header = JSON.parse(firstLine) as { type?: unknown; format?: unknown }
    if (header?.type === 'header' && header.format === 'dsh-memory-export') return 'jsonl'
  } catch {
    // not a one-line JSON header
  }
  if (extension === '.json' || head.startsWith('{')) {
    if (/"(topics|idiosyncrasies)"\s*:/.test(readFileSync(path, 'utf8'))) return 'cue-bank'
  }
  throw new CliUsageError(`cannot tell the format of ${path}; pass --format ${IMPORT_FORMATS.join('|')}`)
}

/** The Markdown files of an instruction import: the file itself, or every `*.md` of a folder. */
export function instructionFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [resolve(path)]
  return readdirSync(path)
    .filter((name) => name.toLowerCase().endsWith('.md'))
    .sort((a, b) => (a === 'MEMORY.md' ? 1 : b === 'MEMORY.md' ? -1 : a.localeCompare(b)))
    .map((name) => resolve(path, name))
}

/** Where a Claude/agents instruction file's memories belong. */
export interface InstructionTarget {
  readonly scope: 'global' | 'workspace'
  /** The project folder (absolute), or the project id `--workspace` named; `import` keys memories by its workspace id. */
  readonly workspace: string | null
  /** True for Claude Code auto-memory files (one memory per file, typed front matter). */
  readonly autoMemory: boolean
  /** Auto memory of a project whose folder could not be found from the slug. */
  readonly unresolvedSlug?: string
}

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child)
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep) && !/^[a-zA-Z]:/.test(rel)
}

/**
 * Find the project folder of a Claude Code project slug (`-home-me-shop-api` for
 * `/home/me/shop-api`). Hyphens are ambiguous (a folder may contain one), so walk the file
 * system and keep the folder whose path turns into the slug. @returns undefined when none does
 */
export function decodeProjectSlug(slug: string, root = '/'): string | undefined {
  const target = slug.replace(/^-/, '')
  const encode = (name: string) => name.replace(/[^A-Za-z0-9]/g, '-')
  const walk = (dir: string, rest: string, depth: number): string | undefined => {
    if (rest === '') return dir
    if (depth > 40) return undefined
    let entries: string[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name)
    } catch {
      return undefined
    }
    for (const name of entries.sort((a, b) => b.length - a.length)) {
      const encoded = encode(name)
      if (rest === encoded || rest.startsWith(`${encoded}-`)) {
        const found = walk(join(dir, name), rest.slice(encoded.length + 1), depth + 1)
        if (found) return found
      }
    }
    return undefined
  }
  return walk(root, target, 0)
}

/**
 * Scope and workspace of an instruction file from where it lives; `--scope`/`--workspace`
 * override. @param home - the user's home folder (tests pass a fixture).
 */
export function instructionTarget(file: string, options: { scope?: 'global' | 'workspace'; workspace?: string; home?: string } = {}): InstructionTarget {
  const home = resolve(options.home ?? homedir())
  const claudeDir = join(home, '.claude')
  const projects = join(claudeDir, 'projects')
  const absolute = resolve(file)
  let target: InstructionTarget
  if (isInside(absolute, projects) && basename(dirname(absolute)) === 'memory') {
    // ~/.claude/projects/<slug>/memory/<file>.md: Claude Code's auto memory of one project.
    const slug = basename(dirname(dirname(absolute)))
    const project = decodeProjectSlug(slug)
    target = { scope: 'workspace', workspace: project ?? null, autoMemory: true, ...(project ? {} : { unresolvedSlug: slug }) }
  } else if (isInside(absolute, claudeDir)) {
    target = { scope: 'global', workspace: null, autoMemory: false }
  } else {
    // A project's CLAUDE.md / AGENTS.md / CLAUDE.local.md, or .claude/CLAUDE.md and .claude/rules/*.md.
    const parts = absolute.split(sep)
    const claudeIndex = parts.lastIndexOf('.claude')
    const project = claudeIndex > 0 ? parts.slice(0, claudeIndex).join(sep) || sep : dirname(absolute)
    target = { scope: 'workspace', workspace: project, autoMemory: false }
  }
  // A project id (`git:…`) names the workspace as it is; a folder is made absolute.
  const workspace = options.workspace && (isGitWorkspace(options.workspace) ? options.workspace : resolve(options.workspace))
  if (workspace) target = { ...target, scope: options.scope ?? 'workspace', workspace, unresolvedSlug: undefined } as InstructionTarget
  if (options.scope === 'global') target = { ...target, scope: 'global', workspace: null }
  else if (options.scope === 'workspace' && !target.workspace) {
    throw new CliUsageError(`--scope workspace needs --workspace <dir> for ${file}`)
  } else if (options.scope === 'workspace') target = { ...target, scope: 'workspace' }
  return target
}
