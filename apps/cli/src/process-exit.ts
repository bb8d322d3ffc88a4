/**
 * How the `dsh-memory` process ends when the terminal goes away under it. Both cases are
 * normal use, so neither may print a stack trace:
 * - a closed stdout pipe (`dsh-memory search … | head`): the reader has all it wants, so the
 *   process stops at once with status 0, as `head`-style pipelines expect;
 * - Ctrl-C (SIGINT): by default nothing is caught, so the process dies of the signal at once
 *   — even inside a long synchronous SQLite call — and the shell reports 130. Writes are
 *   SQLite transactions, so nothing is left half-applied. A command that owns something to
 *   clean up (`serve`'s listener, `bench scale`'s scratch store) takes SIGINT with
 *   {@link onInterrupt}, cleans up, and exits 130 itself.
 */

/** Exit status after SIGINT (128 + signal 2), what the shell reports for Ctrl-C. */
export const INTERRUPTED_EXIT = 130

/** Install the closed-pipe handling on the real process (the executable calls this once). */
export function handleProcessExits(proc: NodeJS.Process = process): void {
  const onStreamError = (error: NodeJS.ErrnoException) => {
    // EPIPE: the reader closed the pipe. Any other error on a standard stream is as final.
    proc.exit(error.code === 'EPIPE' ? 0 : 1)
  }
  proc.stdout.on('error', onStreamError)
  proc.stderr.on('error', onStreamError)
}

/**
 * Until the returned function is called, Ctrl-C runs `cleanup` and ends the process with 130.
 * The handler runs when the event loop turns, so long work must yield now and then.
 */
export function onInterrupt(cleanup: () => void | Promise<void>, proc: NodeJS.Process = process): () => void {
  const handler = () => {
    void Promise.resolve()
      .then(cleanup)
      .catch(() => {})
      .finally(() => proc.exit(INTERRUPTED_EXIT))
  }
  proc.once('SIGINT', handler)
  return () => proc.off('SIGINT', handler)
}
