/**
 * Writing instruction-file items (see `instructions.ts`) into the store, and reading rule files
 * from a workspace for the model's `memory_import` tool. The CLI's `dsh-memory import` and the
 * tool share {@link importInstructionItems}, so both skip the same duplicates and tag imports
 * the same way (`flags.source: 'import'`, the rule without its heading in `flags.rule`).
 */
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { MemoryStore } from '@dsh-memory/store'
import { RecallError } from './errors.ts'
import { type InstructionItem, normalizeForCompare, splitInstructions } from './instructions.ts'

/** One item to import and where it goes. */
export interface PlannedImport {
  readonly file: string
  readonly item: InstructionItem
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
}

/** One imported (or, on a dry run, importable) item. `id` is null for duplicates and dry runs. */
export interface ImportedInstruction {
  readonly id: string | null
  readonly kind: string
  readonly scope: string
  readonly workspace: string | null
  readonly text: string
  readonly duplicate: boolean
}

/** What {@link importInstructionItems} did. */
export interface InstructionImportResult {
  readonly inserted: number
  readonly skipped: number
  readonly memories: ImportedInstruction[]
}

/**
 * Existing memories of one scope, normalised for duplicate detection: their texts, and for
 * imported ones the rule without its heading prefix (`flags.rule`).
 */
async function existingTexts(store: Pick<MemoryStore, 'memories'>, scope: 'global' | 'workspace', workspace: string | null): Promise<Set<string>> {
  const out = new Set<string>()
  for (let offset = 0; ; offset += 10_000) {
    const page = await store.memories.list({ scope, ...(workspace ? { workspace } : {}), includeGlobal: scope === 'global', limit: 10_000, offset })
    for (const memory of page) {
      if (memory.scope !== scope) continue
      out.add(normalizeForCompare(memory.text))
      if (typeof memory.flags.rule === 'string') out.add(normalizeForCompare(memory.flags.rule))
    }
    if (page.length < 10_000) break
  }
  return out
}

/**
 * Add the planned items as memories (priority 3, like every explicit rule), skipping any whose
 * text or rule is already a memory of the same scope — so importing a file twice adds nothing.
 * @param options.actor - recorded in the audit log (`cli`, `model`).
 * @param options.onItem - called after each item (progress).
 */
export async function importInstructionItems(
  store: Pick<MemoryStore, 'memories'>,
  planned: readonly PlannedImport[],
  options: { readonly actor: string; readonly dryRun?: boolean; readonly onItem?: () => void },
): Promise<InstructionImportResult> {
  const seen = new Map<string, Set<string>>()
  const memories: ImportedInstruction[] = []
  let inserted = 0
  let skipped = 0
  for (const { file, item, scope, workspace } of planned) {
    const key = `${scope}\0${workspace ?? ''}`
    if (!seen.has(key)) seen.set(key, await existingTexts(store, scope, workspace))
    const texts = seen.get(key)!
    const normal = normalizeForCompare(item.text)
    const rule = normalizeForCompare(item.body)
    const duplicate = texts.has(normal) || texts.has(rule)
    let id: string | null = null
    if (duplicate) skipped++
    else {
      texts.add(normal)
      texts.add(rule)
      if (!options.dryRun) {
        const memory = await store.memories.add(
          {
            kind: item.kind,
            text: item.text,
            scope,
            ...(workspace ? { workspace } : {}),
            priority: 3,
            flags: { source: 'import', importedFrom: file, rule: item.body, ...(item.heading ? { heading: item.heading } : {}), ...(item.memoryType ? { claudeMemoryType: item.memoryType } : {}) },
          },
          { actor: options.actor },
        )
        id = memory.id
      }
      inserted++
    }
    memories.push({ id, kind: item.kind, scope, workspace, text: item.text, duplicate })
    options.onItem?.()
  }
  return { inserted, skipped, memories }
}

/** Largest rule file `memory_import` reads (a rule file is small; this stops a log or a dump). */
export const MAX_IMPORT_FILE_BYTES = 256 * 1024
/** Most Markdown files one `memory_import` of a folder reads. */
export const MAX_IMPORT_FILES = 50

/**
 * The rule files `memory_import` may read: `path` (relative to the workspace, or absolute)
 * must resolve — symlinks followed — inside the workspace. A file is read as it is; a folder
 * gives its `*.md` files (not recursive, sorted).
 * @throws RecallError `invalid-argument` (path `path`) outside the workspace, not Markdown,
 *   too large or too many; `not-found` when nothing is there.
 */
export function workspaceRuleFiles(workspace: string, path: string): { file: string; text: string }[] {
  if (!workspace) throw new RecallError('invalid-argument', 'this session has no workspace to import from', { path: 'path' })
  let root: string
  let target: string
  try {
    root = realpathSync(workspace)
  } catch {
    throw new RecallError('not-found', `the workspace ${workspace} does not exist`, { path: 'path' })
  }
  try {
    target = realpathSync(resolve(workspace, path))
  } catch {
    throw new RecallError('not-found', `memory_import: ${path} does not exist in the workspace`, { path: 'path' })
  }
  const inside = relative(root, target)
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside)) {
    throw new RecallError('invalid-argument', `memory_import: ${path} is outside the workspace ${workspace}; only files inside it can be imported`, { path: 'path' })
  }
  const files = statSync(target).isDirectory()
    ? readdirSync(target)
        .filter((name) => /\.(md|markdown)$/i.test(name))
        .sort()
        .map((name) => join(target, name))
        .filter((file) => statSync(file).isFile())
    : [target]
  if (files.length === 0) throw new RecallError('not-found', `memory_import: ${path} holds no Markdown files`, { path: 'path' })
  if (files.length > MAX_IMPORT_FILES) throw new RecallError('invalid-argument', `memory_import: ${path} holds ${files.length} Markdown files; the limit is ${MAX_IMPORT_FILES}`, { path: 'path' })
  return files.map((file) => {
    if (!/\.(md|markdown)$/i.test(file) && !/^(CLAUDE|AGENTS|GEMINI)(\.local)?$/i.test(file.split(sep).pop() ?? '')) {
      throw new RecallError('invalid-argument', `memory_import: ${relative(root, file)} is not a Markdown rule file (CLAUDE.md, AGENTS.md, *.md)`, { path: 'path' })
    }
    const size = statSync(file).size
    if (size > MAX_IMPORT_FILE_BYTES) {
      throw new RecallError('invalid-argument', `memory_import: ${relative(root, file)} is ${size} bytes; the limit is ${MAX_IMPORT_FILE_BYTES}`, { path: 'path' })
    }
    return { file, text: readFileSync(file, 'utf8') }
  })
}

/** Instruction items of the workspace rule files, planned into one scope. */
export function planWorkspaceImport(files: readonly { file: string; text: string }[], scope: 'global' | 'workspace', workspace: string): PlannedImport[] {
  return files.flatMap(({ file, text }) => splitInstructions(text).map((item) => ({ file, item, scope, workspace: scope === 'global' ? null : workspace })))
}
