/**
 * Where a request comes from: the session and its workspace id (the store's `workspaceOf` of
 * its cwd: the project's git id, or the path; `''` when unknown).
 */
export interface RecallScope {
  readonly sessionId: string
  readonly workspace: string
  /** The session's directory on disk, when it differs from `workspace` (files are read from here). */
  readonly directory?: string
}
