/**
 * The tree's live settings: the namespace `memory-tree` of the host's settings service holds
 * its two switches and how its section is refreshed (`autoRoute`, `inject`, `refresh`,
 * `contextTimeoutMs`). A change applies from the next message and the next request without a
 * restart; the rest (tools, projection, keyword lists, budgets) stays row config.
 *
 * @module @dsh-memory/tree/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { liveFields, registerLiveSettings } from '@dsh-memory/store/plugin'

/** The settings namespace of the tree (equal to the plugin id, so a settings card keys on it). */
export const TREE_SETTINGS_NAMESPACE = 'memory-tree'

const LIVE = ['autoRoute', 'inject', 'refresh', 'contextTimeoutMs'] as const

/** The live part of the tree's options: the row's `Config` has these fields (adapter-only, not the core's). */
export interface TreeSettings {
  autoRoute: boolean
  inject: boolean
  refresh: 'session' | 'step'
  contextTimeoutMs: number
}

/** Register the namespace; `apply` receives the live part in force, at once and after every change. */
export function applyTreeSettings(ctx: Context, schema: unknown, config: TreeSettings, apply: (live: TreeSettings) => void, warn: (message: string) => void): void {
  registerLiveSettings<TreeSettings, TreeSettings>(ctx, {
    namespace: TREE_SETTINGS_NAMESPACE,
    ...liveFields(schema, config, LIVE),
    resolve: (value) => value,
    apply,
    warn,
  })
}
