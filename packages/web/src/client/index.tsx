/**
 * `@dsh-memory/web/client`: the browser half inside DSH's own web client. The host's module
 * loader materializes this bundle and calls `apply` with the client context; it registers one
 * Settings → Plugins card per memory settings namespace (`settings.plugin.item`, keyed on the
 * namespace) and the memory pill above the composer (`conversation.input.dock`), which opens
 * the memory panel. `apply` only registers: a throw here would take down the whole web UI, so
 * everything that can fail runs inside the components.
 */
import { CARDS } from './cards.ts'
import { MemoryDock } from './dock.tsx'
import { type ScopeLike, SettingsCard } from './settings-card.tsx'
import { injectStyles } from './styles.ts'

/** The bundle's module id: the package name (the host resolves `<row name>/package.json`). */
export const BUNDLE_ID = '@dsh-memory/web'

/** Client services the browser half uses. */
export const inject = ['slots', 'settingsScope']

interface SlotsLike {
  inject(name: string, callback: () => (() => void) | Iterable<() => void>): void
  register(slot: Record<string, unknown>, component: unknown): () => void
}
interface ClientContext {
  readonly slots: SlotsLike
  readonly settingsScope: { bind(spec: { namespace: string }): ScopeLike }
}

/** Register the cards and the pill. */
export function apply(ctx: ClientContext): void {
  injectStyles(BUNDLE_ID)
  for (const card of CARDS) {
    const bound = ctx.settingsScope.bind({ namespace: card.namespace })
    // Stable functions for useSyncExternalStore (the scope's methods need their `this`).
    const scope: ScopeLike = { subscribe: (listener) => bound.subscribe(listener), getSnapshot: () => bound.getSnapshot() }
    ctx.slots.inject('settings.plugin.item', () => ctx.slots.register({ name: 'settings.plugin.item', key: card.namespace, inject: () => ({ scope, card }) }, SettingsCard))
  }
  ctx.slots.inject('conversation.input.dock', () => ctx.slots.register({ name: 'conversation.input.dock', id: 'dsh-memory', order: 50 }, MemoryDock))
}
