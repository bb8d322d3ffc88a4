/**
 * Live settings for dsh-memory plugins: a plugin's user-facing options as a namespace of the
 * host's settings service (`ctx.settings`, `@deepseek-ai/dsh-settings`), layered schema
 * defaults → the row's config (`base`) → the user's settings document, applied from the next
 * turn without a restart. One helper, so every plugin refuses, keeps and reverts the same way.
 *
 * @module @dsh-memory/store/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'

/** The part of the host's `SettingsScope` this helper uses (declared structurally: no host dependency). */
export interface LiveSettingsScope<T> {
  get(): T
  watch(callback: (next: T, prev: T) => void | Promise<void>): () => void
}

interface SettingsServiceLike {
  register<T>(namespace: string, schema: unknown, options: { base?: Partial<T>; applies?: 'live' | 'restart'; validate?: (value: T) => void }): LiveSettingsScope<T>
}

/** What {@link registerLiveSettings} needs from a plugin. */
export interface LiveSettingsOptions<T, R> {
  /** The namespace (lowercase kebab-case; dsh-memory uses the plugin id, e.g. `memory-recall`). */
  readonly namespace: string
  /** Schemastery schema of the live part of the config (what a settings card edits). */
  readonly schema: unknown
  /** The row's config for those fields: the layer under the user's document. */
  readonly base: T
  /**
   * The plugin's own cross-field rules (its `resolveOptions`), turning a schema-valid value
   * into what the core runs with. Throwing refuses the write that produced the value (the
   * error names the field), and a document edit that fails keeps the last good value.
   */
  readonly resolve: (value: T) => R
  /** Put resolved options into force (called once at registration and after every change). */
  readonly apply: (resolved: R) => void
  readonly warn: (message: string) => void
}

/**
 * The live part of a row: an object schema of some top-level fields of the row's schema (the
 * very same field schemas, so shapes, defaults and descriptions never drift) and the row
 * config's values for them, the `base` layer.
 */
export function liveFields<C extends object, K extends keyof C & string>(rowSchema: unknown, config: C, keys: readonly K[]): { schema: unknown; base: Pick<C, K> } {
  const dict = (rowSchema as { dict: Record<string, z> }).dict
  return {
    schema: z.object(Object.fromEntries(keys.map((key) => [key, dict[key]!]))),
    base: Object.fromEntries(keys.map((key) => [key, config[key]])) as Pick<C, K>,
  }
}

/**
 * Register a live settings namespace when the host has a settings service (a host without
 * one keeps the row's config, as before). The value in force is applied at once and after
 * every committed change; when the service or the plugin goes away the row's config is put
 * back. Never throws into the host: a document that already holds an invalid section at
 * start is reported and the row's config stays in force.
 */
export function registerLiveSettings<T, R>(ctx: Context, options: LiveSettingsOptions<T, R>): void {
  const use = (value: T, origin: string) => {
    try {
      options.apply(options.resolve(value))
    } catch (error) {
      options.warn(`${options.namespace}: ${origin} not applied, the previous value stays in force: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
  ctx.inject(['settings'], (settingsCtx) => {
    const service = (settingsCtx as unknown as { settings: SettingsServiceLike }).settings
    let scope: LiveSettingsScope<T>
    try {
      scope = service.register<T>(options.namespace, options.schema, {
        base: options.base,
        applies: 'live',
        validate: (value) => void options.resolve(value),
      })
    } catch (error) {
      options.warn(
        `${options.namespace}: the settings section was refused, the row's config stays in force until it is fixed and the host restarts: ${error instanceof Error ? error.message : String(error)}`,
      )
      return
    }
    use(scope.get(), 'the stored settings were')
    settingsCtx.effect(() => {
      const stop = scope.watch((next) => use(next, 'the new settings were'))
      return () => {
        stop()
        use(options.base, "the row's config was")
      }
    }, `${options.namespace} live settings`)
  })
}
