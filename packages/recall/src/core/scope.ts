/** Where a request comes from: the session and its workspace (its cwd; `''` when unknown). */
export interface RecallScope {
  readonly sessionId: string
  readonly workspace: string
}
