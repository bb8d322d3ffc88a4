/**
 * The on-disk layout, exactly as the reference describes it:
 *
 * ```
 * <workspace>/
 *   memory-palace/
 *     .namespaces.json     # session id → folder name
 *     config.json          # defaults for new sessions (a settings layer)
 *     <folder>/            # the memory name
 *       config.json        # this session's own settings and memory name
 *       .state.json        # watermark and archived ranges
 *       index.jsonl        # one line per archived turn
 *       <YYYY-MM>/
 *         _summary.md      # append-only: one paragraph per category per archive
 *         <category>/
 *           <prefix>-<category>-<YYYYMMDD-HHmmss>.md
 * ```
 *
 * Times in folder and file names are local time (what the user reads on their clock);
 * the JSON files carry epoch milliseconds.
 */
import { join } from 'node:path'

/** Format version of `.namespaces.json`, `.state.json`, `config.json` files and `index.jsonl` lines. */
export const FORMAT_VERSION = 1
/** The session → folder map. */
export const NAMESPACES_FILE = '.namespaces.json'
/** Settings layer file (workspace defaults at the root, session settings in a folder). */
export const CONFIG_FILE = 'config.json'
/** Per-namespace state. */
export const STATE_FILE = '.state.json'
/** Per-namespace turn index. */
export const INDEX_FILE = 'index.jsonl'
/** Per-month summary. */
export const SUMMARY_FILE = '_summary.md'
/** Cross-process lock folder at the palace root. */
export const LOCK_DIR = '.lock'

const pad = (value: number, width = 2): string => String(value).padStart(width, '0')

/** `YYYY-MM` of a date, local time. */
export function monthOf(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}`
}

/** `YYYYMMDD-HHmmss` of a date, local time (volume file names). */
export function fileStamp(date: Date): string {
  return `${date.getFullYear()}${pad(date.getMonth() + 1)}${pad(date.getDate())}-${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}`
}

/** `YYYY-MM-DD HH:mm:ss` of a date, local time (headings). */
export function displayTime(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
}

/** True for a `YYYY-MM` month folder name. */
export function isMonth(value: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(value)
}

/** Volume file name: `<prefix>-<category>-<YYYYMMDD-HHmmss>[-n].md`. */
export function volumeFileName(prefix: string, category: string, date: Date, sequence = 1): string {
  return `${prefix}-${category}-${fileStamp(date)}${sequence > 1 ? `-${sequence}` : ''}.md`
}

/** Paths of one palace (one workspace). */
export class PalaceLayout {
  /** Absolute path of `<workspace>/<rootDirName>`. */
  readonly root: string

  constructor(
    readonly workspace: string,
    rootDirName: string,
  ) {
    this.root = join(workspace, rootDirName)
  }

  get namespacesFile(): string {
    return join(this.root, NAMESPACES_FILE)
  }
  get configFile(): string {
    return join(this.root, CONFIG_FILE)
  }
  get lockDir(): string {
    return join(this.root, LOCK_DIR)
  }
  /** Folder of one memory name (already validated). */
  namespaceDir(namespace: string): string {
    return join(this.root, namespace)
  }
}
