/**
 * Errors of `dsh-memory install` / `uninstall`. Each says what is wrong and the next step, and
 * carries a stable `reason` (the `code` of a {@link CliError} stays one of the CLI's own).
 */
import { CliError, EXIT } from '../io.ts'

/** Stable reasons an install or uninstall stops. */
export type InstallErrorReason =
  | 'invalid-argument'
  | 'no-launcher'
  | 'node-too-old'
  | 'pnpm-missing'
  | 'no-tarballs'
  | 'profile-missing'
  | 'profile-broken'
  | 'second-cordis'
  | 'add-failed'
  | 'remove-failed'
  | 'verify-failed'

/** An install step failed: `message` says what, `next` what to do about it. */
export class InstallError extends CliError {
  override readonly name: string = 'InstallError'
  readonly reason: InstallErrorReason
  readonly next: string
  constructor(reason: InstallErrorReason, what: string, next: string, options?: { cause?: unknown }) {
    super(reason === 'invalid-argument' ? 'invalid-argument' : 'failed', `${what}\n  next: ${next}`, reason === 'invalid-argument' ? EXIT.usage : EXIT.failure, options)
    this.reason = reason
    this.next = next
  }
}
