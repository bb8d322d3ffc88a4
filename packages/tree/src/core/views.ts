/**
 * Read-only views of a project over a {@link TreeRepository}: the mainline snapshot that the
 * context block and the projection render, and the status report. Nothing here writes.
 */
import type { TreeOptions } from './options.js'
import type { MainlineSnapshot } from './render.js'
import type { TreeRepository } from './repository.js'
import type { TreeStatus } from './tree-contract.js'
import { TreeError } from './errors.js'
import type { ItemKind, Project } from './types.js'

/** One consistent view of a project's mainline (items, recent turns, open branches, baseline). */
export async function readSnapshot(repository: TreeRepository, projectId: string, recentTurns: number, excludeSessionId?: string): Promise<MainlineSnapshot> {
  const project = await repository.getProject(projectId)
  if (!project) throw new TreeError('not-found', `no project ${projectId}`)
  const [items, turns, branches, baseline] = await Promise.all([
    repository.listItems(project.id),
    repository.recentTurns(project.id, {
      limit: recentTurns,
      ...(excludeSessionId === undefined ? {} : { excludeSessionId }),
    }),
    repository.listBranches(project.id, { status: 'active' }),
    project.baselineCheckpointId ? repository.getCheckpoint(project.baselineCheckpointId) : Promise.resolve(undefined),
  ])
  return { project, items, turns, branches, baseline }
}

/** What {@link readStatus} reports on besides the project. */
export interface StatusScope {
  readonly workspace: string
  /** The caller's project; undefined when its workspace has none yet. */
  readonly project: Project | undefined
  readonly projectionDir: string | null
}

/** Project, counts, branches, baseline and routing settings. */
export async function readStatus(repository: TreeRepository, options: Readonly<TreeOptions>, scope: StatusScope): Promise<TreeStatus> {
  const { project } = scope
  const projects = (await repository.listProjects()).map(({ id, name, revision, stage }) => ({ id, name, revision, stage }))
  const routing = {
    chatKeywords: options.chatKeywords.length,
    projectKeywords: options.projectKeywords.length,
    routeMargin: options.routeMargin,
    unknownRoute: options.unknownRoute,
    samples: { chat: options.chatKeywords.slice(0, 8), project: options.projectKeywords.slice(0, 8) },
  }
  const counts: Record<ItemKind, number> = { constraint: 0, decision: 0, outcome: 0, question: 0 }
  const base = { workspace: scope.workspace, projects, routing, projectionDir: scope.projectionDir }
  if (!project) return { ...base, project: undefined, workspaces: [], counts, items: [], currentBranch: undefined, openBranches: [], baseline: undefined, turns: 0 }
  const [items, openBranches, watermark, workspaces] = await Promise.all([
    repository.listItems(project.id),
    repository.listBranches(project.id, { status: 'active' }),
    repository.turnWatermark(project.id),
    repository.bindings(project.id),
  ])
  for (const item of items) counts[item.kind]++
  const baseline = project.baselineCheckpointId ? await repository.getCheckpoint(project.baselineCheckpointId) : undefined
  return {
    ...base,
    project,
    workspaces,
    counts,
    items,
    currentBranch: openBranches.find((branch) => branch.id === project.currentBranchId),
    openBranches,
    baseline,
    turns: watermark.count,
  }
}
