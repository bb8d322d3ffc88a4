import type { EventAliases } from '@dsh-memory/store/kit'
import type { ArchivedEvent } from './core/palace.js'

declare module '@deepseek-ai/cordis' {
  interface Events {
    /**
     * Turns were archived into a workspace memory palace (by the model through
     * `palace_archive`, or automatically before a compaction). Emitted after the files,
     * the index and the state are committed.
     */
    'memory-palace/archived'(event: ArchivedEvent): void
    /** @deprecated Use `memory-palace/archived` (same payload, emitted right before); removed in 1.0. */
    'palace/archived'(event: ArchivedEvent): void
  }
}

/** Event names this plugin emits, each only after its write is committed. */
export const PALACE_EVENTS = Object.freeze({ archived: 'memory-palace/archived' } as const)

/** The names published before the naming rule, emitted as well until 1.0 (new name → old name). */
export const PALACE_EVENT_ALIASES: EventAliases = Object.freeze({ [PALACE_EVENTS.archived]: 'palace/archived' })

export type { ArchivedEvent }
