import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { projectionRevision, renderBranchMarkdown, renderMainlineMarkdown, type MainlineSnapshot } from './render.js'
import type { TreeRepository } from './repository.js'
import { slugify } from './text.js'
import type { Checkpoint, Project } from './types.js'

/**
 * Writes the derived markdown projection under one root directory:
 *
 * ```
 * <root>/<project-slug>-<id>/mainline.md
 *                           /branches/<branch-id>.md
 *                           /checkpoints/<checkpoint-id>.md
 * ```
 *
 * The database is the source of truth; these files are rebuilt from it at any time. Several
 * processes may write the same files: each write goes to a temporary file and is renamed into
 * place, and a file already showing a newer revision is left alone, so a slow writer never
 * replaces a newer projection with an older one.
 */
export class ProjectionWriter {
  constructor(readonly root: string) {}

  /** The directory of one project's files. */
  projectDir(project: Pick<Project, 'id' | 'name'>): string {
    return join(this.root, `${slugify(project.name)}-${project.id.replace(/^pj-/, '')}`)
  }

  /**
   * Write `text` to `relative` inside the project's directory unless the file there already
   * shows a newer revision. Checkpoint documents are immutable: pass `revision` undefined.
   * @returns the absolute path, or undefined when a newer file was kept.
   */
  async write(project: Project, relative: string, text: string, revision: number | undefined = project.revision): Promise<string | undefined> {
    const path = join(this.projectDir(project), relative)
    await mkdir(join(path, '..'), { recursive: true })
    if (revision !== undefined) {
      const existing = await readFile(path, 'utf8').catch(() => undefined)
      if (existing !== undefined && projectionRevision(existing) > revision) return undefined
    }
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
    await writeFile(temporary, text, 'utf8')
    await rename(temporary, path)
    return path
  }
}

/** Which files of a project a change touched (`all`: every branch and checkpoint, for a rebuild). */
export interface ProjectionTouch {
  branchId?: string
  checkpoint?: Checkpoint
  all?: boolean
}

/**
 * Write a project's `mainline.md` from `snapshot`, plus the branch and checkpoint files the
 * change touched.
 * @returns the touched checkpoint's path when there is one, else the project's directory.
 */
export async function writeProjectFiles(writer: ProjectionWriter, repository: TreeRepository, snapshot: MainlineSnapshot, touched: ProjectionTouch): Promise<string | undefined> {
  const project = snapshot.project
  const projectId = project.id
  const [items, branches, workspaces] = await Promise.all([
    repository.listItems(projectId, { status: 'all' }),
    repository.listBranches(projectId, { status: 'all', includeCleared: touched.all === true }),
    repository.bindings(projectId),
  ])
  await writer.write(project, 'mainline.md', renderMainlineMarkdown({ ...snapshot, items, branches: branches.filter((b) => b.checkpointId === null), workspaces }))
  const branchIds = touched.all ? branches.map((branch) => branch.id) : touched.branchId ? [touched.branchId] : []
  for (const id of branchIds) {
    const branch = await repository.getBranch(id)
    if (branch) await writer.write(project, `branches/${id}.md`, renderBranchMarkdown(project, branch, await repository.branchEvents(id)))
  }
  const checkpoints = touched.all ? await repository.listCheckpoints(projectId) : touched.checkpoint ? [touched.checkpoint] : []
  let checkpointPath: string | undefined
  for (const checkpoint of checkpoints) {
    const path = await writer.write(project, `checkpoints/${checkpoint.id}.md`, checkpoint.document, undefined)
    if (checkpoint === touched.checkpoint) checkpointPath = path
  }
  return touched.checkpoint ? checkpointPath : writer.projectDir(project)
}
