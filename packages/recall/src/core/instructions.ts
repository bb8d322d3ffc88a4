/**
 * Instruction files → memories, as a pure function of the text: `CLAUDE.md`, `AGENTS.md`,
 * `CLAUDE.local.md`, `.claude/rules/*.md` and Claude Code's auto-memory files
 * (`~/.claude/projects/<project>/memory/*.md`, one memory per file with a `type` in its front
 * matter). A Markdown file is split into the items a person would call one rule each: a
 * top-level list item (with its nested items), a paragraph, a table; a list item ending in ":"
 * hands its context to its nested items, which become items of their own. The nearest heading
 * is kept as a prefix ("Testing: run npm test before committing") so an item still makes sense
 * alone. Code blocks stay with the item they belong to; `@path` import lines and HTML comments
 * are dropped.
 */

/** What kind of memory an item becomes. */
export type ImportedKind = 'instruction' | 'preference' | 'fact'

/** One memory-to-be. */
export interface InstructionItem {
  readonly kind: ImportedKind
  readonly text: string
  /** The rule itself, without the heading prefix: two files stating the same rule under different headings are one memory. */
  readonly body: string
  /** The heading the item was under ('' at the top). */
  readonly heading: string
  /** Claude Code auto memory: the file's `type` (user, feedback, project, reference). */
  readonly memoryType?: string
}

/** Longest item text; longer items are cut at a line break (the store caps memories at 8 000 characters). */
export const MAX_ITEM_CHARS = 4_000

// Words that mark a statement of taste rather than a rule to follow.
const PREFERENCE = /\b(prefer|prefers|preferred|preference|preferences|favou?rite|i like|i love|i dislike|i hate|i enjoy|likes|dislikes)\b|偏好|喜欢|喜歡|更喜欢|不喜欢|爱用|习惯用|好き|好み|嫌い|好む/i

/** `preference` when the text states a taste, else `instruction`. */
export function classifyInstruction(text: string): 'instruction' | 'preference' {
  return PREFERENCE.test(text) ? 'preference' : 'instruction'
}

/** Front matter (`---` … `---`) as flat `key: value` pairs, and the body after it. */
export function splitFrontMatter(text: string): { data: Record<string, string>; body: string } {
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text)
  if (!match) return { data: {}, body: text }
  const data: Record<string, string> = {}
  for (const line of match[1]!.split(/\r?\n/)) {
    const pair = /^([A-Za-z0-9_-]+)\s*:\s*(.*)$/.exec(line)
    if (pair) data[pair[1]!.toLowerCase()] = pair[2]!.trim().replace(/^(['"])(.*)\1$/, '$2')
  }
  return { data, body: text.slice(match[0].length) }
}

const LIST_ITEM = /^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$/
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/
const FENCE = /^\s*(```|~~~)/
const IMPORT_LINE = /^\s*@[^\s]+\s*$/

interface Block {
  kind: 'list' | 'paragraph'
  heading: string
  lines: string[]
  /** For list items: the indentation of the item's marker. */
  indent: number
  /** Context handed down by a parent item that ends with ":". */
  context?: string
}

function clip(text: string): string {
  if (text.length <= MAX_ITEM_CHARS) return text
  const cut = text.lastIndexOf('\n', MAX_ITEM_CHARS)
  return `${text.slice(0, cut > MAX_ITEM_CHARS / 2 ? cut : MAX_ITEM_CHARS).trimEnd()}\n…[truncated]`
}

/**
 * Split one instruction file into items.
 * @param text - the file's content.
 */
export function splitInstructions(text: string): InstructionItem[] {
  const { body } = splitFrontMatter(text)
  const lines = body.replace(/<!--[\s\S]*?-->/g, '').split(/\r?\n/)
  const blocks: Block[] = []
  let heading = ''
  let current: Block | undefined
  // Parents of the current list item that end with ":" (their text is context for children).
  let parents: { indent: number; text: string }[] = []
  const flush = () => {
    if (current && current.lines.some((line) => line.trim() !== '')) blocks.push(current)
    current = undefined
  }

  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!
    if (FENCE.test(line)) {
      // A code block belongs to the item before it (a command under "Build:"), or stands alone.
      const fence = line.trim().slice(0, 3)
      const code = [line]
      while (++index < lines.length) {
        code.push(lines[index]!)
        if (lines[index]!.trim().startsWith(fence)) break
      }
      if (!current) current = { kind: 'paragraph', heading, lines: [], indent: 0 }
      current.lines.push(...code.map((codeLine) => codeLine.replace(/^ {0,8}/, '')))
      continue
    }
    const headingMatch = HEADING.exec(line)
    if (headingMatch) {
      flush()
      parents = []
      heading = headingMatch[2]!.trim()
      continue
    }
    if (IMPORT_LINE.test(line)) continue
    if (line.trim() === '') {
      // A blank line ends a paragraph; a list item may continue after it (indented text).
      if (current?.kind === 'paragraph') flush()
      continue
    }
    const item = LIST_ITEM.exec(line)
    if (item) {
      const indent = item[1]!.replace(/\t/g, '    ').length
      const textOfItem = item[2]!.trim()
      if (current?.kind === 'list' && indent > current.indent) {
        // A nested item: its own item when the parent only introduces it ("Code style:"),
        // otherwise a detail of the parent.
        const parentText = current.lines[0]!.trim()
        if (current.lines.length === 1 && /[:：]$/.test(parentText)) {
          parents.push({ indent: current.indent, text: [current.context, parentText.replace(/[:：]$/, '')].filter(Boolean).join(' › ') })
          current = undefined
        } else {
          current.lines.push(line)
          continue
        }
      }
      parents = parents.filter((parent) => parent.indent < indent)
      flush()
      const context = parents[parents.length - 1]?.text ?? ''
      current = { kind: 'list', heading, lines: [textOfItem], indent, ...(context ? { context } : {}) }
      continue
    }
    if (current?.kind === 'list' && /^\s+\S/.test(line)) {
      current.lines.push(line)
      continue
    }
    if (current?.kind === 'list') flush()
    if (!current) current = { kind: 'paragraph', heading, lines: [], indent: 0 }
    current.lines.push(line)
  }
  flush()

  const items: InstructionItem[] = []
  for (const block of blocks) {
    const raw = block.lines
      .map((line, index) => (index === 0 ? line.trim() : line.replace(/\s+$/, '')))
      .join('\n')
      .trim()
    // A parent that only introduced its children ("Code style:") carries no rule of its own.
    if (raw.replace(/[:：]$/, '').trim().length < 2 || (block.kind === 'list' && /[:：]$/.test(raw) && !raw.includes('\n'))) continue
    const prefix = [block.heading, block.context].filter(Boolean).join(' › ')
    const text = clip(prefix ? `${prefix}: ${raw}` : raw)
    items.push({ kind: classifyInstruction(text), text, body: clip(raw), heading: block.heading })
  }
  return items
}

/** Claude Code auto-memory `type` → memory kind: feedback is an instruction, user a preference, the rest facts. */
export function autoMemoryKind(type: string | undefined, text: string): ImportedKind {
  switch ((type ?? '').toLowerCase()) {
    case 'feedback':
      return 'instruction'
    case 'user':
      return 'preference'
    case 'project':
    case 'reference':
      return 'fact'
    default:
      return classifyInstruction(text)
  }
}

/**
 * One Claude Code auto-memory file (front matter `name`, `description`, `type`; the body is the
 * memory) → one item. `MEMORY.md`, the index of the others, is split like an instruction file.
 */
export function autoMemoryItem(text: string): InstructionItem | undefined {
  const { data, body } = splitFrontMatter(text)
  const content = body.trim()
  if (!content && !data.description) return undefined
  const title = data.name || data.description || ''
  const joined = content ? (title && !content.toLowerCase().startsWith(title.toLowerCase()) ? `${title}: ${content}` : content) : title
  return { kind: autoMemoryKind(data.type, joined), text: clip(joined), body: clip(content || title), heading: title, ...(data.type ? { memoryType: data.type.toLowerCase() } : {}) }
}

/** Normal form for duplicate detection: NFKC, collapsed whitespace, lower case. */
export function normalizeForCompare(text: string): string {
  return text.normalize('NFKC').replace(/\s+/g, ' ').trim().toLowerCase()
}
