/**
 * Crash-safe file writes.
 *
 * Every palace file is replaced, never edited in place: the new content goes to a temp file
 * in the same folder, is fsynced, then renamed over the old one (rename is atomic on POSIX
 * and NTFS), and the folder is fsynced so the rename itself survives power loss. An archive
 * changes several files at once (volumes, `_summary.md`, `index.jsonl`, `.state.json`); those
 * are committed through a small journal: all temps are written and synced first, then the
 * journal listing the renames is written atomically (the commit point), then the renames run
 * in order (volumes first, state last), then the journal is removed. Recovery replays a
 * journal that exists and deletes temps that no journal names, so a crash anywhere leaves
 * either the old files or the new files, never half of one and never a mix.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { PalaceError } from './errors.js'
import { isInside } from './names.js'

/** Suffix marker of temp files; anything carrying it is either journaled or garbage. */
export const TEMP_MARKER = '.palace-tmp-'
/** Journal file name inside a namespace folder. */
export const JOURNAL_FILE = '.journal.json'
const JOURNAL_VERSION = 1

/**
 * Test seam for crash simulation: called at every step of a commit. A hook that throws
 * stops the commit right there, exactly as a crash would (nothing is cleaned up).
 */
export type CrashHook = (step: string) => void

async function fsyncPath(path: string, flags: 'r' | 'r+' = 'r'): Promise<void> {
  let handle
  try {
    handle = await open(path, flags)
    await handle.sync()
  } catch (error) {
    // Some platforms (Windows) refuse to open or fsync a directory; the rename is still atomic there.
    if ((error as NodeJS.ErrnoException).code !== 'EISDIR' && (error as NodeJS.ErrnoException).code !== 'EPERM' && (error as NodeJS.ErrnoException).code !== 'EINVAL') throw error
  } finally {
    await handle?.close()
  }
}

function tempPathFor(final: string): string {
  return join(dirname(final), `${basename(final)}${TEMP_MARKER}${process.pid}-${randomBytes(4).toString('hex')}`)
}

async function writeSynced(path: string, data: string): Promise<void> {
  const handle = await open(path, 'w')
  try {
    await handle.writeFile(data, 'utf8')
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * Replace one file atomically (temp + fsync + rename + folder fsync).
 * @throws PalaceError `io`
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const temp = tempPathFor(path)
  try {
    await mkdir(dirname(path), { recursive: true })
    await writeSynced(temp, data)
    await rename(temp, path)
    await fsyncPath(dirname(path))
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined)
    throw new PalaceError('io', `could not write ${path}: ${(error as Error).message}`, { cause: error })
  }
}

interface Journal {
  version: number
  /** [temp, final] pairs relative to the journal's folder, in rename order. */
  renames: [string, string][]
}

/**
 * A multi-file commit inside one folder tree (a namespace folder). Stage files, then
 * {@link FileCommit.commit}. Files are renamed in staging order: stage volumes first and
 * the state file last.
 */
export class FileCommit {
  private readonly staged: [temp: string, final: string][] = []
  private journaled = false

  constructor(
    private readonly root: string,
    private readonly crash?: CrashHook,
  ) {}

  /** Write `data` to a synced temp file beside `final` (which must be inside the root). */
  async stage(final: string, data: string): Promise<void> {
    if (!isInside(this.root, final)) throw new PalaceError('path-refused', `refusing to write outside the palace: ${final}`)
    await mkdir(dirname(final), { recursive: true })
    const temp = tempPathFor(final)
    this.staged.push([temp, final])
    await writeSynced(temp, data)
    this.crash?.(`staged:${relative(this.root, final)}`)
  }

  /** Make every staged file current, or (on a crash) leave a journal that recovery replays. */
  async commit(): Promise<void> {
    if (this.staged.length === 0) return
    const journal: Journal = {
      version: JOURNAL_VERSION,
      renames: this.staged.map(([temp, final]) => [relative(this.root, temp), relative(this.root, final)]),
    }
    await writeFileAtomic(join(this.root, JOURNAL_FILE), `${JSON.stringify(journal)}\n`)
    this.journaled = true
    this.crash?.('journal-written')
    await applyRenames(this.root, journal, this.crash)
    await rm(join(this.root, JOURNAL_FILE), { force: true })
    this.crash?.('journal-removed')
  }

  /**
   * Drop staged temps after a failure before the commit point. After the commit point the
   * journal owns them: they stay for {@link recoverCommits} to finish the renames.
   */
  async abort(): Promise<void> {
    if (this.journaled) return
    await Promise.all(this.staged.map(([temp]) => rm(temp, { force: true }).catch(() => undefined)))
    this.staged.length = 0
  }
}

async function applyRenames(root: string, journal: Journal, crash?: CrashHook): Promise<void> {
  const folders = new Set<string>()
  for (const [tempRel, finalRel] of journal.renames) {
    const temp = join(root, tempRel)
    const final = join(root, finalRel)
    if (!isInside(root, temp) || !isInside(root, final)) throw new PalaceError('unsupported-format', `journal in ${root} names a path outside it`)
    try {
      await rename(temp, final)
    } catch (error) {
      // Already renamed by the interrupted run: the final file is the committed one.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
    folders.add(dirname(final))
    crash?.(`renamed:${finalRel}`)
  }
  for (const folder of folders) await fsyncPath(folder)
}

/**
 * Finish or discard an interrupted commit under `root`: replay the journal if there is one,
 * then delete every temp file no journal names.
 * @returns how many renames were replayed and temps removed.
 */
export async function recoverCommits(root: string, options: { scanTemps?: boolean } = {}): Promise<{ replayed: number; removedTemps: number }> {
  let replayed = 0
  const journalPath = join(root, JOURNAL_FILE)
  let raw: string | undefined
  try {
    raw = await readFile(journalPath, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  if (raw !== undefined) {
    let journal: Journal
    try {
      journal = JSON.parse(raw) as Journal
    } catch (error) {
      throw new PalaceError('unsupported-format', `${journalPath} is not valid JSON`, { cause: error })
    }
    if (journal.version !== JOURNAL_VERSION || !Array.isArray(journal.renames)) {
      throw new PalaceError('unsupported-format', `${journalPath} has unknown version ${JSON.stringify(journal.version)}`)
    }
    await applyRenames(root, journal)
    replayed = journal.renames.length
    await rm(journalPath, { force: true })
  }
  const removedTemps = options.scanTemps === false ? 0 : await removeTemps(root, 4)
  return { replayed, removedTemps }
}

async function removeTemps(folder: string, depth: number): Promise<number> {
  let removed = 0
  let entries
  try {
    entries = await readdir(folder, { withFileTypes: true })
  } catch {
    return 0
  }
  for (const entry of entries) {
    const path = join(folder, entry.name)
    if (entry.isDirectory() && depth > 0) removed += await removeTemps(path, depth - 1)
    else if (entry.isFile() && entry.name.includes(TEMP_MARKER)) {
      await rm(path, { force: true })
      removed++
    }
  }
  return removed
}

/** Options of {@link withLock}. */
export interface LockOptions {
  /** Give up after this long (ms). Default 10 000. */
  readonly timeoutMs?: number
  /**
   * A lock older than this is considered left behind by a dead process (ms), whoever its
   * owner. The fallback when the owner cannot be checked (another host, no owner record).
   * Default 60 000.
   */
  readonly staleMs?: number
}

/** What a lock folder records about the process holding it (`owner.json`). */
export interface LockOwner {
  readonly pid: number
  /** Absent in records of older palace versions (treated as this host). */
  readonly hostname?: string
  /** Wall-clock start of the owning process (ms since epoch); informational. */
  readonly startedAt: number
  /** Kernel start time of the process (Linux `/proc/<pid>/stat` field 22), to detect pid reuse. */
  readonly startTicks?: string
  /** Unique per acquisition, so a holder only ever removes its own lock. */
  readonly token: string
  readonly at: number
}

/**
 * An owner record is written right after the folder is created; a folder without a readable
 * one for this long was left by a process killed in between (a live process writes it within
 * milliseconds).
 */
const OWNERLESS_STALE_MS = 5_000

/** Kernel start time of a process, or `undefined` where `/proc` does not exist. */
async function processStartTicks(pid: number | 'self'): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined)
  if (!stat) return undefined
  // The command name (field 2) is in parentheses and may contain spaces: count from after it.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
}

let selfStartTicks: Promise<string | undefined> | undefined

/**
 * Whether the owner of a lock is certainly gone: same host, and its pid does not exist
 * (`kill(pid, 0)` → ESRCH) or now belongs to a process started later (pid reuse). A lock of
 * another host, or one that cannot be judged, is not "dead" here (the age rule applies).
 */
async function ownerIsDead(owner: LockOwner): Promise<boolean> {
  // A record without a hostname comes from an older palace version, which only ran locally.
  if ((owner.hostname !== undefined && owner.hostname !== hostname()) || !Number.isInteger(owner.pid) || owner.pid <= 0) return false
  if (owner.pid === process.pid) {
    // Our own pid: only a previous process that had it (reuse after a reboot/kill) can have left it.
    return owner.startTicks !== undefined && owner.startTicks !== (await (selfStartTicks ??= processStartTicks('self')))
  }
  try {
    process.kill(owner.pid, 0)
  } catch (error) {
    // EPERM: the pid exists but belongs to another user, so it is alive.
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
  if (owner.startTicks === undefined) return false
  const current = await processStartTicks(owner.pid)
  return current !== undefined && current !== owner.startTicks
}

async function readOwner(lockDir: string): Promise<LockOwner | undefined> {
  const raw = await readFile(join(lockDir, 'owner.json'), 'utf8').catch(() => undefined)
  if (!raw) return undefined
  try {
    const owner = JSON.parse(raw) as LockOwner
    return owner && typeof owner === 'object' && typeof owner.pid === 'number' ? owner : undefined
  } catch {
    return undefined
  }
}

/** Marker of a broken lock folder moved aside before removal. */
const BROKEN_LOCK_MARKER = '.broken-'

/** Remove broken-lock folders a killed breaker left behind (older than a minute: surely finished). */
async function sweepBrokenLocks(lockDir: string): Promise<void> {
  const prefix = `${basename(lockDir)}${BROKEN_LOCK_MARKER}`
  for (const name of await readdir(dirname(lockDir)).catch(() => [] as string[])) {
    if (!name.startsWith(prefix)) continue
    const path = join(dirname(lockDir), name)
    const age = await stat(path).then((info) => Date.now() - info.mtimeMs, () => 0)
    if (age > 60_000) await rm(path, { recursive: true, force: true }).catch(() => undefined)
  }
}

/**
 * Remove a lock judged stale, but only if it is still the same lock: it is renamed away first
 * (atomic), and a lock that turns out to have been re-taken meanwhile is put back.
 */
async function breakLock(lockDir: string, judged: LockOwner | undefined): Promise<void> {
  const aside = `${lockDir}${BROKEN_LOCK_MARKER}${randomBytes(6).toString('hex')}`
  try {
    await rename(lockDir, aside)
  } catch {
    return // Gone already (its owner released it, or another waiter broke it).
  }
  const moved = await readOwner(aside)
  if (moved?.token !== judged?.token) {
    // Someone took the lock between our check and the rename: give it back.
    await rename(aside, lockDir).catch(() => undefined)
    return
  }
  await rm(aside, { recursive: true, force: true }).catch(() => undefined)
}

/**
 * Run `fn` holding a cross-process lock (a lock folder created with `mkdir`, which is atomic).
 * The folder records its owner (pid, hostname, process start); a lock whose owner process is
 * dead on this host is taken over at once, so a process killed while archiving does not block
 * the workspace. Any lock older than `staleMs` (another host, no owner record) is broken too.
 * @throws PalaceError `busy` when the lock is not acquired in time.
 */
export async function withLock<T>(lockDir: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const staleMs = options.staleMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  await mkdir(dirname(lockDir), { recursive: true })
  const owner: LockOwner = {
    pid: process.pid,
    hostname: hostname(),
    startedAt: Math.round(Date.now() - process.uptime() * 1000),
    startTicks: await (selfStartTicks ??= processStartTicks('self')),
    token: randomBytes(8).toString('hex'),
    at: Date.now(),
  }
  let recorded = false
  for (;;) {
    try {
      await mkdir(lockDir)
      recorded = await writeFile(join(lockDir, 'owner.json'), JSON.stringify(owner)).then(
        () => true,
        () => false,
      )
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw new PalaceError('io', `could not create lock ${lockDir}: ${(error as Error).message}`, { cause: error })
      const age = await stat(lockDir).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      )
      const holder = await readOwner(lockDir)
      const stale = age > staleMs || (holder ? await ownerIsDead(holder) : age > OWNERLESS_STALE_MS)
      if (stale) {
        await breakLock(lockDir, holder)
        continue
      }
      if (Date.now() > deadline) throw new PalaceError('busy', `the palace lock ${lockDir} is held by another process${holder ? ` (pid ${holder.pid} on ${holder.hostname})` : ''}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  await sweepBrokenLocks(lockDir)
  try {
    return await fn()
  } finally {
    // Release only our own lock: if it was broken as stale meanwhile, the folder may be another's.
    if (!recorded || (await readOwner(lockDir))?.token === owner.token) await rm(lockDir, { recursive: true, force: true }).catch(() => undefined)
  }
}

/** Read a text file, or `undefined` when it does not exist. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new PalaceError('io', `could not read ${path}: ${(error as Error).message}`, { cause: error })
  }
}
