/**
 * Capture's live settings: the namespace `memory-capture` of the host's settings service holds
 * all three options (`enabled`, `stripCodeBlocks`, `maxMessageChars`). A change applies from
 * the next session event without a restart: turning capture off stops recording at once.
 *
 * @module @dsh-memory/capture/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { liveFields, registerLiveSettings } from '@dsh-memory/store/plugin'
import { type CaptureOptions, resolveCaptureOptions } from './core/options.js'
import type { CaptureRecorder } from './core/recorder.js'

/** The settings namespace of capture (equal to the plugin id, so a settings card keys on it). */
export const CAPTURE_SETTINGS_NAMESPACE = 'memory-capture'

/** Register the namespace and keep `recorder` on the value in force. */
export function applyCaptureSettings(ctx: Context, schema: unknown, config: CaptureOptions, recorder: CaptureRecorder, warn: (message: string) => void): void {
  registerLiveSettings<CaptureOptions, CaptureOptions>(ctx, {
    namespace: CAPTURE_SETTINGS_NAMESPACE,
    ...liveFields(schema, config, ['enabled', 'stripCodeBlocks', 'maxMessageChars']),
    resolve: (value) => resolveCaptureOptions(value),
    apply: (options) => recorder.reconfigure(options),
    warn,
  })
}
