/**
 * Recall's live settings: the namespace `memory-recall` of the host's settings service holds
 * the options a user tunes while working — the default memory mode, the recall budgets and
 * switches, and the embeddings endpoint (its API key is `role('secret')`: the host never
 * sends it to a browser). A change applies from the next turn without a restart. Options that
 * shape registrations (tools, command) or background upkeep (layers, lifecycle, retention)
 * stay row config.
 *
 * @module @dsh-memory/recall/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { liveFields, registerLiveSettings } from '@dsh-memory/store/plugin'
import { createEmbedder, type Embedder } from './core/embedding.ts'
import { assertMiniLmInstalled } from './core/minilm.ts'
import { type RecallOptions, type RecallOptionsInput, resolveRecallOptions } from './core/options.ts'
import type { RecallEngine } from './core/recall-engine.ts'
import type { Config } from './config.ts'

/** The settings namespace of recall (equal to the plugin id, so a settings card keys on it). */
export const RECALL_SETTINGS_NAMESPACE = 'memory-recall'

/** The live part of recall's options (the row's `Config`). */
export type RecallSettings = Pick<RecallOptions, 'defaultMode' | 'recall' | 'embedding'>

/**
 * Register the namespace and keep `engine` on the value in force. The embedder is rebuilt
 * only when the embedding block changed, so a budget change keeps its connection state.
 */
export function applyRecallSettings(ctx: Context, schema: unknown, config: RecallOptions, engine: RecallEngine, warn: (message: string) => void): void {
  // The first apply builds the embedder for the value in force; later ones only on a change.
  let embedding = ''
  let embedder: Embedder | null = null
  registerLiveSettings<RecallSettings, RecallOptions>(ctx, {
    namespace: RECALL_SETTINGS_NAMESPACE,
    ...liveFields(schema, config, ['defaultMode', 'recall', 'embedding']),
    resolve: (value) => {
      const options = resolveRecallOptions({ ...config, ...value } as RecallOptionsInput)
      // Refuse the in-process model when its optional packages are missing, naming the field.
      if (options.embedding.enabled && options.embedding.provider === 'minilm') assertMiniLmInstalled()
      return options
    },
    apply: (options) => {
      const next = JSON.stringify(options.embedding)
      if (next !== embedding) {
        const previous = embedder
        embedder = options.embedding.enabled ? createEmbedder(options.embedding) : null
        embedding = next
        // The replaced embedder's worker (in-process model) ends; calls in flight fall back to keywords.
        void previous?.close?.()
      }
      engine.reconfigure(options, embedder)
    },
    warn,
  })
  ctx.effect(() => () => void embedder?.close?.(), 'memory-recall embeddings')
}
