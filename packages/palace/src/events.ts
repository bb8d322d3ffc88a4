import type { ArchivedEvent } from './core/palace.js'

declare module '@deepseek-ai/cordis' {
  interface Events {
    /**
     * Turns were archived into a workspace memory palace (by the model through
     * `palace_archive`, or automatically before a compaction). Emitted after the files,
     * the index and the state are committed.
     */
    'palace/archived'(event: ArchivedEvent): void
  }
}

/** Event names this plugin emits, each only after its write is committed. */
export const PALACE_EVENTS = Object.freeze({ archived: 'palace/archived' } as const)

export type { ArchivedEvent }
