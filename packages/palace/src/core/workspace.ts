/**
 * One workspace's palace: the session → memory-name map, the settings layers, and the
 * namespace archives. Writes are serialised twice: an in-process queue (one DSH process
 * may run several sessions in one workspace) and a lock folder (several DSH processes may
 * share a workspace).
 */
import { readdir, rename, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { PalaceError } from './errors.js'
import { readTextIfExists, recoverCommits, withLock, writeFileAtomic, type CrashHook } from './fs.js'
import { CONFIG_FILE, FORMAT_VERSION, INDEX_FILE, PalaceLayout, STATE_FILE } from './layout.js'
import { isValidNamespace, validateNamespace } from './names.js'
import { NamespaceArchive, type ArchiveOutcome, type ArchivePlan } from './namespace.js'
import { mergeSettings, parseSettingsLayer, type PalaceOptions, type PalaceSettings, type SettingsLayer } from './options.js'

/** `.namespaces.json`. */
interface NamespacesFile {
  version: number
  /** Session id → memory name (folder). */
  sessions: Record<string, string>
}

/** The three layers `palace_config get` shows. */
export interface SessionSettings {
  readonly namespace: string | undefined
  readonly effective: PalaceSettings
  readonly workspace: SettingsLayer
  readonly session: SettingsLayer
}

/** Dependencies of {@link PalaceWorkspace}. */
export interface PalaceWorkspaceDeps {
  readonly now: () => Date
  readonly crash?: CrashHook
  readonly lockTimeoutMs?: number
}

const RESERVED_CONFIG_KEYS = ['version', 'namespace', 'sessionId', 'automatic'] as const
/** Automatic names tried (`name`, `name-2`, … `name-99`) before giving up. */
const AUTO_NAME_ATTEMPTS = 98

/** The palace of one workspace. */
export class PalaceWorkspace {
  readonly layout: PalaceLayout
  private queue: Promise<unknown> = Promise.resolve()
  private readonly archives = new Map<string, NamespaceArchive>()
  private readonly recovered = new Set<string>()

  constructor(
    readonly workspace: string,
    public options: PalaceOptions,
    private readonly deps: PalaceWorkspaceDeps,
  ) {
    this.layout = new PalaceLayout(workspace, options.rootDirName)
  }

  /** Absolute path of the palace folder. */
  get root(): string {
    return this.layout.root
  }

  /** Run `fn` alone: after earlier writes of this process, holding the cross-process lock. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(() => withLock(this.layout.lockDir, fn, { timeoutMs: this.deps.lockTimeoutMs ?? 10_000 }))
    this.queue = run.catch(() => undefined)
    return run
  }

  private async readNamespaces(): Promise<NamespacesFile> {
    const raw = await readTextIfExists(this.layout.namespacesFile)
    if (raw === undefined) return { version: FORMAT_VERSION, sessions: {} }
    let parsed: NamespacesFile
    try {
      parsed = JSON.parse(raw) as NamespacesFile
    } catch (error) {
      throw new PalaceError('unsupported-format', `${this.layout.namespacesFile} is not valid JSON`, { cause: error })
    }
    if (parsed.version !== FORMAT_VERSION || typeof parsed.sessions !== 'object' || parsed.sessions === null) {
      throw new PalaceError('unsupported-format', `${this.layout.namespacesFile} has format version ${JSON.stringify(parsed.version)}; this palace reads version ${FORMAT_VERSION}`)
    }
    // A hand-edited map must not point outside the palace ("../elsewhere").
    for (const [sessionId, name] of Object.entries(parsed.sessions)) {
      if (!isValidNamespace(name)) {
        throw new PalaceError('invalid-config', `${this.layout.namespacesFile} maps session ${sessionId} to ${JSON.stringify(name)}, which is not a valid memory name`)
      }
    }
    return parsed
  }

  /** Session id → memory name. */
  async sessions(): Promise<Readonly<Record<string, string>>> {
    return (await this.readNamespaces()).sessions
  }

  /** The memory name of a session, or undefined when it is unnamed. */
  async namespaceOf(sessionId: string): Promise<string | undefined> {
    return (await this.readNamespaces()).sessions[sessionId]
  }

  /** Every memory name of this workspace (mapped or present as a folder with a state file). */
  async listNamespaces(): Promise<string[]> {
    const names = new Set(Object.values(await this.sessions()))
    const entries = await readdir(this.root, { withFileTypes: true }).catch(() => [])
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue
      const info = await stat(join(this.root, entry.name, STATE_FILE)).catch(() => undefined)
      if (info?.isFile()) names.add(entry.name)
    }
    return [...names].sort()
  }

  /**
   * Give a session its memory name. Renaming a named session (an automatic name included)
   * moves its folder (one atomic rename), so its volumes, summaries, index and state follow
   * it; the store index is keyed by session, so search keeps finding them. The old name no
   * longer resolves.
   * @throws PalaceError `invalid-name`, `namespace-taken`
   */
  async setNamespace(sessionId: string, name: string): Promise<{ namespace: string; previous: string | undefined }> {
    validateNamespace(name)
    return this.exclusive(async () => {
      const file = await this.readNamespaces()
      const previous = file.sessions[sessionId]
      if (previous === name) {
        // Choosing the name it already has makes an automatic name a chosen one.
        await this.writeSessionConfig(name, sessionId, await this.sessionLayer(name), false)
        return { namespace: name, previous }
      }
      const folders = await readdir(this.root).catch(() => [] as string[])
      const taken = this.takenBy(file, folders, sessionId, name, previous)
      if (taken) throw new PalaceError('namespace-taken', `${taken}; choose another name`)
      if (previous !== undefined && folders.includes(previous)) {
        await rename(this.layout.namespaceDir(previous), this.layout.namespaceDir(name))
        this.archives.delete(previous)
        this.recovered.delete(previous)
        // The state file carries the name too.
        const statePath = join(this.layout.namespaceDir(name), STATE_FILE)
        const state = await readTextIfExists(statePath)
        if (state !== undefined) await writeFileAtomic(statePath, `${JSON.stringify({ ...JSON.parse(state), namespace: name }, null, 2)}\n`)
      }
      file.sessions[sessionId] = name
      await writeFileAtomic(this.layout.namespacesFile, `${JSON.stringify(file, null, 2)}\n`)
      const layer = previous !== undefined ? await this.sessionLayer(name).catch(() => ({})) : {}
      await this.writeSessionConfig(name, sessionId, layer, false)
      return { namespace: name, previous }
    })
  }

  /**
   * The memory name of a session, giving it an automatic one first when it has none: the
   * first of `candidate(0)`, `candidate(1)`, … that no other session holds and no folder
   * uses (compared ignoring case, as on case-insensitive file systems). Decided under the
   * lock, so two processes never hand out one name twice.
   * @returns the name, and whether it was given now.
   * @throws PalaceError `namespace-taken` when every candidate is taken
   */
  async ensureNamespace(sessionId: string, candidate: (attempt: number) => string): Promise<{ namespace: string; created: boolean }> {
    const known = await this.namespaceOf(sessionId)
    if (known !== undefined) return { namespace: known, created: false }
    return this.exclusive(async () => {
      const file = await this.readNamespaces()
      const raced = file.sessions[sessionId]
      if (raced !== undefined) return { namespace: raced, created: false }
      const folders = await readdir(this.root).catch(() => [] as string[])
      for (let attempt = 0; attempt < AUTO_NAME_ATTEMPTS; attempt++) {
        const name = validateNamespace(candidate(attempt))
        if (this.takenBy(file, folders, sessionId, name, undefined)) continue
        file.sessions[sessionId] = name
        await writeFileAtomic(this.layout.namespacesFile, `${JSON.stringify(file, null, 2)}\n`)
        await this.writeSessionConfig(name, sessionId, {}, true)
        return { namespace: name, created: true }
      }
      throw new PalaceError('namespace-taken', `no free automatic memory name for session ${sessionId} in ${this.root} (tried ${AUTO_NAME_ATTEMPTS}); name it with palace_config`)
    })
  }

  /** Why `name` cannot be `sessionId`'s (another session holds it, or a folder uses it), or undefined. */
  private takenBy(file: NamespacesFile, folders: readonly string[], sessionId: string, name: string, previous: string | undefined): string | undefined {
    const lower = name.toLowerCase()
    const owner = Object.entries(file.sessions).find(([id, other]) => id !== sessionId && other.toLowerCase() === lower)
    if (owner) return `memory name "${name}" is already used by session ${owner[0]}`
    const clash = folders.find((folder) => folder.toLowerCase() === lower && folder !== previous)
    if (clash) return `a folder "${clash}" already exists in ${this.root}`
    return undefined
  }

  /** True when the session's memory name was given automatically (not chosen). */
  async isAutomatic(namespace: string): Promise<boolean> {
    validateNamespace(namespace)
    const raw = await readTextIfExists(join(this.layout.namespaceDir(namespace), CONFIG_FILE))
    try {
      return raw !== undefined && (JSON.parse(raw) as { automatic?: unknown }).automatic === true
    } catch {
      return false
    }
  }

  /** @param automatic - marks a name the palace chose; `keep` (a settings change) leaves the mark as it is, a chosen name drops it. */
  private async writeSessionConfig(namespace: string, sessionId: string, layer: SettingsLayer, automatic: boolean | 'keep' = 'keep'): Promise<void> {
    const keep = automatic === 'keep' ? await this.isAutomatic(namespace) : automatic
    const head = { version: FORMAT_VERSION, namespace, sessionId, ...(keep ? { automatic: true } : {}) }
    await writeFileAtomic(join(this.layout.namespaceDir(namespace), CONFIG_FILE), `${JSON.stringify({ ...head, ...layer }, null, 2)}\n`)
  }

  private async readLayer(path: string): Promise<SettingsLayer> {
    const raw = await readTextIfExists(path)
    if (raw === undefined) return {}
    let parsed: Record<string, unknown>
    try {
      parsed = JSON.parse(raw) as Record<string, unknown>
    } catch (error) {
      throw new PalaceError('invalid-config', `${path} is not valid JSON`, { cause: error })
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new PalaceError('invalid-config', `${path} must hold a JSON object`)
    if (parsed.version !== undefined && parsed.version !== FORMAT_VERSION) {
      throw new PalaceError('unsupported-format', `${path} has format version ${JSON.stringify(parsed.version)}; this palace reads version ${FORMAT_VERSION}`)
    }
    const layer = { ...parsed }
    for (const key of RESERVED_CONFIG_KEYS) delete layer[key]
    return parseSettingsLayer(layer, path)
  }

  /** The workspace defaults (`memory-palace/config.json`). @throws PalaceError `invalid-config` naming file and field */
  workspaceLayer(): Promise<SettingsLayer> {
    return this.readLayer(this.layout.configFile)
  }

  /** One session's own settings (`memory-palace/<name>/config.json`). */
  sessionLayer(namespace: string): Promise<SettingsLayer> {
    validateNamespace(namespace)
    return this.readLayer(join(this.layout.namespaceDir(namespace), CONFIG_FILE))
  }

  /** Effective settings of a session, with the layers they came from. */
  async settings(sessionId: string): Promise<SessionSettings> {
    const namespace = await this.namespaceOf(sessionId)
    const workspace = await this.workspaceLayer()
    const session = namespace !== undefined ? await this.sessionLayer(namespace) : {}
    return { namespace, effective: mergeSettings(this.options, workspace, session), workspace, session }
  }

  /**
   * Change settings in one layer. The merged result is validated before anything is
   * written, so a rule spanning layers cannot be broken.
   * @throws PalaceError `invalid-config`, `unnamed-session`
   */
  async updateSettings(sessionId: string, target: 'session' | 'workspace', patch: SettingsLayer): Promise<SessionSettings> {
    const checked = parseSettingsLayer(patch, 'palace_config set')
    return this.exclusive(async () => {
      const namespace = await this.namespaceOf(sessionId)
      const workspace = await this.workspaceLayer()
      if (target === 'workspace') {
        const next = { ...workspace, ...checked }
        const session = namespace !== undefined ? await this.sessionLayer(namespace) : {}
        const effective = mergeSettings(this.options, next, session)
        await writeFileAtomic(this.layout.configFile, `${JSON.stringify({ version: FORMAT_VERSION, ...next }, null, 2)}\n`)
        return { namespace, effective, workspace: next, session }
      }
      if (namespace === undefined) {
        throw new PalaceError('unnamed-session', 'this session has no memory name yet: set namespace first (palace_config set namespace="…"), or change the workspace defaults with scope="workspace"')
      }
      const next = { ...(await this.sessionLayer(namespace)), ...checked }
      const effective = mergeSettings(this.options, workspace, next)
      await this.writeSessionConfig(namespace, sessionId, next)
      return { namespace, effective, workspace, session: next }
    })
  }

  /** The archive object of a memory name (cached; not recovered yet). */
  private archiveObject(namespace: string): NamespaceArchive {
    let archive = this.archives.get(namespace)
    if (!archive) {
      archive = new NamespaceArchive(this.layout.namespaceDir(namespace), namespace, { now: this.deps.now, crash: this.deps.crash })
      this.archives.set(namespace, archive)
    }
    return archive
  }

  /** The archive of a memory name, recovered from any interrupted commit on first use. */
  async openArchive(namespace: string): Promise<NamespaceArchive> {
    validateNamespace(namespace)
    const archive = this.archiveObject(namespace)
    if (!this.recovered.has(namespace)) {
      const owner = Object.entries(await this.sessions()).find(([, name]) => name === namespace)?.[0] ?? ''
      await this.exclusive(() => archive.recover(owner))
      this.recovered.add(namespace)
    }
    return archive
  }

  /** Whether a memory name has any archived turn. */
  async hasArchives(namespace: string): Promise<boolean> {
    validateNamespace(namespace)
    const info = await stat(join(this.layout.namespaceDir(namespace), INDEX_FILE)).catch(() => undefined)
    return info !== undefined && info.size > 0
  }

  /** Archive a plan under the lock, finishing any interrupted commit first. */
  async archive(namespace: string, sessionId: string, plan: ArchivePlan): Promise<ArchiveOutcome> {
    const archive = await this.openArchive(namespace)
    return this.exclusive(async () => {
      await recoverCommits(archive.dir, { scanTemps: false })
      return archive.archive(plan, sessionId)
    })
  }

  /** Append a note paragraph to the current month's summary, under the lock. */
  async appendNote(namespace: string, note: { category: string; fromTurn: number; toTurn: number; body: string }): Promise<{ month: string; path: string }> {
    const archive = await this.openArchive(namespace)
    return this.exclusive(() => archive.appendNote(note))
  }
}
