/**
 * Per-session memory modes and the injection switch, and their persistence.
 *
 * Modes (what a session recalls; capture and distillation are not affected):
 * - `auto`: everything visible from the session — its workspace's memories, its own
 *   session-scoped memories and global ones, every kind; persona and scene navigation of
 *   both the workspace and the global scope.
 * - `work`: focused on the project. Workspace and session memories of every kind, and from
 *   the global scope only standing instructions and decisions (kinds `instruction`,
 *   `decision`); the workspace persona and workspace scenes, not the global persona.
 * - `chat`: personal conversation. Global memories of every kind (who the user is, what
 *   they like) and from the workspace only preferences (kind `preference`); the global
 *   persona and global scenes, no project detail.
 * - `off`: nothing is injected and no memory section enters the system prompt. The tools
 *   and the `/memory` command still work when the user or the model asks explicitly.
 *
 * The injection switch: `follow` injects when the config's `recall.enabled` is true, `on`
 * injects even when it is false, `off` never injects (a write-only session: capture and
 * distillation go on, nothing comes back into this session).
 *
 * Kept per session in recall's own table (`session-settings.ts`), so a resumed session after
 * a restart keeps its choice.
 */
import type { InjectSwitch, MemoryMode } from './options.ts'

/** Every memory mode, for validation and help text. */
export const MEMORY_MODES: readonly MemoryMode[] = Object.freeze(['auto', 'chat', 'work', 'off'])
/** Every injection switch value. */
export const INJECT_SWITCHES: readonly InjectSwitch[] = Object.freeze(['follow', 'on', 'off'])

/** One-line meaning of each mode (command help, status). */
export const MODE_DESCRIPTIONS: Readonly<Record<MemoryMode, string>> = Object.freeze({
  auto: 'workspace + global memories of every kind, persona and scenes',
  work: 'workspace memories; from global only instructions and decisions; workspace persona and scenes',
  chat: 'global memories; from the workspace only preferences; global persona and scenes',
  off: 'nothing is recalled into this session',
})

/** What a mode lets into a session. */
export interface ModePolicy {
  /** Whether anything is recalled at all. */
  readonly recalls: boolean
  /** Kinds allowed from the global scope (`undefined` = all, empty = none). */
  readonly globalKinds: readonly string[] | undefined
  /** Kinds allowed from the workspace and session scopes (`undefined` = all, empty = none). */
  readonly workspaceKinds: readonly string[] | undefined
  readonly globalPersona: boolean
  readonly workspacePersona: boolean
  readonly globalScenes: boolean
  readonly workspaceScenes: boolean
}

const POLICIES: Readonly<Record<MemoryMode, ModePolicy>> = Object.freeze({
  auto: { recalls: true, globalKinds: undefined, workspaceKinds: undefined, globalPersona: true, workspacePersona: true, globalScenes: true, workspaceScenes: true },
  work: { recalls: true, globalKinds: ['instruction', 'decision'], workspaceKinds: undefined, globalPersona: false, workspacePersona: true, globalScenes: false, workspaceScenes: true },
  chat: { recalls: true, globalKinds: undefined, workspaceKinds: ['preference'], globalPersona: true, workspacePersona: false, globalScenes: true, workspaceScenes: false },
  off: { recalls: false, globalKinds: [], workspaceKinds: [], globalPersona: false, workspacePersona: false, globalScenes: false, workspaceScenes: false },
})

/** The policy of `mode`. */
export function modePolicy(mode: MemoryMode): ModePolicy {
  return POLICIES[mode]
}

/** True when `policy` lets a memory of this scope and kind into the session. */
export function policyAllows(policy: ModePolicy, memory: { scope: string; kind: string }): boolean {
  if (!policy.recalls) return false
  const kinds = memory.scope === 'global' ? policy.globalKinds : policy.workspaceKinds
  return kinds === undefined || kinds.includes(memory.kind)
}

/** A session's memory settings. */
export interface SessionMemorySettings {
  readonly mode: MemoryMode
  readonly inject: InjectSwitch
  /** When they were last changed; `null` when the session still runs on the defaults. */
  readonly updatedAt: number | null
}

/** Whether automatic injection runs for a session with these settings. */
export function injectionActive(settings: Pick<SessionMemorySettings, 'mode' | 'inject'>, recallEnabled: boolean): boolean {
  if (settings.mode === 'off' || settings.inject === 'off') return false
  return settings.inject === 'on' || recallEnabled
}

/** Short label of the settings, like the reference's input-bar pill (`memory·auto`, `memory·write-only`). */
export function settingsLabel(settings: Pick<SessionMemorySettings, 'mode' | 'inject'>, recallEnabled: boolean): string {
  if (settings.mode === 'off') return 'memory·off'
  if (!injectionActive(settings, recallEnabled)) return 'memory·write-only'
  return `memory·${settings.mode}`
}
