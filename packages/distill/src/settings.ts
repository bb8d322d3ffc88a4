/**
 * Distill's live settings: the namespace `memory-distill` of the host's settings service
 * holds the whole distill config — the model route (provider, model, fallbacks, per-layer
 * chains), call limits, extraction triggers and the L2/L3 switches. A change applies from the
 * next distillation job and the next captured message; a job in flight finishes as it began.
 *
 * @module @dsh-memory/distill/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { registerLiveSettings } from '@dsh-memory/store/plugin'
import { type DistillOptions, resolveDistillOptions } from './core/options.js'

/** The settings namespace of distill (equal to the plugin id, so a settings card keys on it). */
export const DISTILL_SETTINGS_NAMESPACE = 'memory-distill'

/** Register the namespace; `apply` receives the resolved options in force, at once and after every change. */
export function applyDistillSettings(ctx: Context, schema: unknown, config: DistillOptions, apply: (options: DistillOptions) => void, warn: (message: string) => void): void {
  registerLiveSettings<DistillOptions, DistillOptions>(ctx, {
    namespace: DISTILL_SETTINGS_NAMESPACE,
    schema,
    base: config,
    resolve: (value) => resolveDistillOptions(value),
    apply,
    warn,
  })
}
