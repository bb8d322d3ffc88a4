/**
 * How the `dsh-memory` process ends when the terminal goes away under it. Both cases are
 * normal use, so neither may print a stack trace:
 * - a closed stdout pipe (`dsh-memory search … | head`): the reader has all it wants, so the
 *   process stops at once with status 0, as `head`-style pipelines expect;
 * - Ctrl-C (SIGINT): status 130 (128 + SIGINT), the shell convention. A command that handles
 *   SIGINT itself to shut down cleanly (`serve`) still does so; the process then exits 130.
 */

/** Exit status after SIGINT (128 + signal 2). */
export const INTERRUPTED_EXIT = 130

/** Install the handlers on the real process; returns the status to use once the CLI returns. */
export function handleProcessExits(proc: NodeJS.Process = process): (code: number) => number {
  let interrupted = false
  const onStreamError = (error: NodeJS.ErrnoException) => {
    // EPIPE: the reader closed the pipe; anything else on a standard stream is just as final.
    proc.exit(error.code === 'EPIPE' ? 0 : 1)
  }
  proc.stdout.on('error', onStreamError)
  proc.stderr.on('error', onStreamError)
  const onInterrupt = () => {
    interrupted = true
    // Our listener is the only one: no command is shutting down on its own, so stop now.
    if (proc.listenerCount('SIGINT') <= 1) proc.exit(INTERRUPTED_EXIT)
  }
  proc.on('SIGINT', onInterrupt)
  return (code) => (interrupted ? INTERRUPTED_EXIT : code)
}
