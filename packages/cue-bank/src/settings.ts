/**
 * The cue bank's live settings: the namespace `memory-cue-bank` of the host's settings service
 * holds its switches and thresholds (`topic`, `inject`, `extract`, `decay`): topic-switch
 * detection, whether and how the wake block is injected (its format included), what each turn
 * writes, and forgetting. A change applies from the next message without a restart. What was
 * fixed at start stays row config: the partition and its user, the embedding client and match
 * mode, and the block's order among runtime contexts (a value changing `inject.order` is
 * refused naming the field).
 *
 * @module @dsh-memory/cue-bank/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { liveFields, registerLiveSettings } from '@dsh-memory/store/plugin'
import type { CueBank } from './core/cue-bank.js'
import { type CueBankOptions, resolveCueBankOptions, type ResolvedCueBankOptions } from './core/options.js'

/** The settings namespace of the cue bank (equal to the plugin id, so a settings card keys on it). */
export const CUE_BANK_SETTINGS_NAMESPACE = 'memory-cue-bank'

const LIVE = ['topic', 'inject', 'extract', 'decay'] as const

/** The live part of the cue bank's options (the row's `Config`). */
export type CueBankSettings = Pick<CueBankOptions, (typeof LIVE)[number]>

/** Register the namespace and keep `bank` on the value in force. */
export function applyCueBankSettings(ctx: Context, schema: unknown, config: CueBankOptions, bank: CueBank, warn: (message: string) => void): void {
  registerLiveSettings<CueBankSettings, ResolvedCueBankOptions>(ctx, {
    namespace: CUE_BANK_SETTINGS_NAMESPACE,
    ...liveFields(schema, config, LIVE),
    resolve: (value) => {
      const options = resolveCueBankOptions({ ...config, ...value })
      bank.assertLive(options)
      return options
    },
    apply: (options) => bank.reconfigure(options),
    warn,
  })
}
