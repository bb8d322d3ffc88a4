/**
 * Renamed events. Every event is `memory-<folder>/<fact>`; the names published before that rule
 * (`memory/captured`, `cue-bank/*`, `distill/*`, `palace/*`, `recall/*`) stay as deprecated
 * aliases until 1.0 because users' plugins subscribe to them. Each package maps its new names to
 * the old ones in its `events.ts` and emits through `emitRenamed`, so one place decides that an
 * old name is still announced and one change removes them all.
 */

/** New event name → the deprecated name it replaced (emitted as well until 1.0). */
export type EventAliases = Readonly<Record<string, string>>

/** The part of a Cordis context that emits (structural: the kit imports no host package). */
export interface EventEmitterLike {
  emit(name: string, ...args: any[]): void
}

/** The part of a Cordis context that listens; `on` returns the listener's disposer. */
export interface EventListenerLike {
  on(name: string, listener: (...args: any[]) => unknown): () => unknown
}

/**
 * Emit `name`, then its deprecated alias (if `aliases` has one) with the same arguments, so a
 * listener on either name gets the event exactly once. The alias is emitted even when a
 * listener of the new name throws (Cordis stops an emit at the first throwing listener); the
 * first error is rethrown after both emits, for the caller's own guard to log.
 */
export function emitRenamed(emitter: EventEmitterLike, aliases: EventAliases, name: string, ...args: unknown[]): void {
  let failed = false
  let failure: unknown
  for (const each of [name, aliases[name]]) {
    if (each === undefined) continue
    try {
      emitter.emit(each, ...args)
    } catch (error) {
      if (!failed) failure = error
      failed = true
    }
  }
  if (failed) throw failure
}

/**
 * Listen to an event under its new name and its deprecated alias, for events that code outside
 * this project may still emit under the old name. Our own emitters send both names with the
 * same payload object (`emitRenamed`); the handler skips that second copy, so it runs once per
 * event whichever names the emitter used.
 * @returns a disposer removing both listeners.
 */
export function onRenamed(
  listener: EventListenerLike,
  aliases: EventAliases,
  name: string,
  handler: (...args: any[]) => unknown,
): () => void {
  // Payload object → the name it arrived under first; weak, so nothing is kept alive.
  const seen = new WeakMap<object, string>()
  const receive = (under: string) => (...args: unknown[]) => {
    const payload = args[0]
    if (typeof payload === 'object' && payload !== null) {
      const first = seen.get(payload)
      if (first !== undefined && first !== under) return undefined
      seen.set(payload, under)
    }
    return handler(...args)
  }
  const disposers = [listener.on(name, receive(name))]
  const deprecated = aliases[name]
  if (deprecated !== undefined) disposers.push(listener.on(deprecated, receive(deprecated)))
  return () => {
    for (const dispose of disposers) dispose()
  }
}
