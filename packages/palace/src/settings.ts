/**
 * The palace's live settings: the namespace `memory-palace` of the host's settings service
 * holds how strongly the model is guided back to its archive (`enabled`, `recallStrength`,
 * `injectNotice`, `enableSteer`, the advised search budget). A change applies from the next
 * turn without a restart; a workspace's or session's own palace config (palace_config) still
 * overrides it, as it overrides the row. The rest stays row config (files, gates, timeouts).
 *
 * @module @dsh-memory/palace/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { liveFields, registerLiveSettings } from '@dsh-memory/store/plugin'
import { type PalaceOptions, resolvePalaceOptions } from './core/options.js'

/** The settings namespace of the palace (equal to the plugin id, so a settings card keys on it). */
export const PALACE_SETTINGS_NAMESPACE = 'memory-palace'

const LIVE = ['enabled', 'recallStrength', 'injectNotice', 'enableSteer', 'recallBudgetRounds', 'recallBudgetKeywords'] as const

/** The live part of the palace's options (the row's `Config`). */
export type PalaceSettings = Pick<PalaceOptions, (typeof LIVE)[number]>

/** Register the namespace; `apply` receives the resolved options in force, at once and after every change. */
export function applyPalaceSettings(ctx: Context, schema: unknown, config: PalaceOptions, apply: (options: PalaceOptions) => void, warn: (message: string) => void): void {
  registerLiveSettings<PalaceSettings, PalaceOptions>(ctx, {
    namespace: PALACE_SETTINGS_NAMESPACE,
    ...liveFields(schema, config, LIVE),
    resolve: (value) => resolvePalaceOptions({ ...config, ...value }),
    apply,
    warn,
  })
}
