/**
 * `@dsh-memory/web`: the memory browser as a library (no DSH import). `startMemoryBrowser`
 * is what `dsh-memory serve` runs; `createMemoryBrowserHandler` is the `(req, res)` handler
 * the DSH plugin (`@dsh-memory/web/plugin`) mounts under the host's web server.
 *
 * The bare package is also the host plugin (the same as `@dsh-memory/web/plugin`): DSH finds a
 * package's browser half (`./client`, see `dsh.client` in package.json) only through a loader
 * row named after the package itself, so a web profile mounts `name: '@dsh-memory/web'`.
 *
 * @module @dsh-memory/web
 */
import type { Context } from '@deepseek-ai/cordis'
import type { Config as PluginConfig } from './plugin.ts'

/** Plugin id of the row (the same plugin as `@dsh-memory/web/plugin`). */
export const name = 'memory-web'
/** The store service and the host's web server. */
export const inject = ['memoryStore', 'webServer'] as const
/**
 * Mount the plugin. The host code is loaded only here, so the library above never imports the
 * host (the CLI and `dsh-memory serve` use this entry without DSH); the row's config is
 * validated by the plugin's schema, naming the field.
 */
export async function apply(ctx: Context, config: Partial<PluginConfig> = {}): Promise<void> {
  const plugin = await import('./plugin.ts')
  plugin.apply(ctx, plugin.Config(config as PluginConfig))
}
export { MemoryBrowser, PAGE_SIZE, RECENT_CONVERSATIONS, SEARCH_CAP } from './core/browser.ts'
export type {
  CueView,
  DistillActivity,
  MemoryBrowserStoreOptions,
  MemoryDetail,
  MemoryQuery,
  MemoryRow,
  OpenMemoryBrowserOptions,
  Overview,
  Page,
  PalaceNamespaceView,
  TreeProjectView,
} from './core/browser.ts'
export { createMemoryBrowserHandler, csrfToken, tokenCookieName } from './core/handler.ts'
export type { MemoryBrowserHandler, MemoryBrowserHandlerOptions } from './core/handler.ts'
export { startMemoryBrowser } from './core/server.ts'
export type { RunningMemoryBrowser, StartMemoryBrowserOptions } from './core/server.ts'
export { DEFAULT_PORT, isLoopback, resolveServeOptions } from './core/options.ts'
export type { ServeOptions, ServeOptionsInput } from './core/options.ts'
export { newToken } from './core/token.ts'
export { boundedEditDistance, completeQuery, didYouMean, editBudget, loadVocabulary, SUGGEST_LIMITS, Vocabulary } from './core/suggest.ts'
export { DATABASE_FILE, databaseOf, locateDataDir } from './core/data-dir.ts'
// The overview's counts come from the store's stats API (`store.stats`).
export type { DayCounts, StoreCounts } from '@dsh-memory/store'
export { describeError, isWebError, WebError } from './core/errors.ts'
export type { WebErrorCode } from './core/errors.ts'
export { LANGS, pickLang, translator } from './core/i18n.ts'
export type { Lang, MessageKey } from './core/i18n.ts'
export { escapeHtml, html, raw, Raw } from './core/html.ts'
export type { HtmlValue } from './core/html.ts'
export { barChart, bucketDays, niceScale, shortNumber, stackedAreaChart } from './core/chart.ts'
export type { ChartInput, ChartSeries } from './core/chart.ts'
