import { resolve } from 'node:path'
import { isGitWorkspace, workspaceOf, type WorkspaceIdentity } from '@dsh-memory/store'

/**
 * The workspace id a `--workspace` value names, as the hosts key it: a project id
 * (`git:<host>/<owner>/<repo>`) as given; a directory as its git project's id in a clone with a
 * remote, else its absolute path (always its path with `identity: 'path'`, the store row's
 * `workspaceIdentity: path`).
 */
export function workspaceFilter(value: string, identity: WorkspaceIdentity = 'git-remote'): string {
  return isGitWorkspace(value) ? value : workspaceOf(resolve(value), { identity })
}
