/** L2 of the store contract: scenes grouping memories. */
import type { Flags, PageOptions, Scope, WriteOptions } from './types-common.ts'
import type { MemoryScopeFilter } from './types-memories.ts'

/** An L2 scene: a titled summary grouping related memories. */
export interface Scene {
  id: string
  title: string
  summary: string
  scope: Scope
  workspace: string | null
  sessionId: string | null
  memoryIds: string[]
  revision: number
  createdAt: number
  updatedAt: number
  flags: Flags
  /** The user whose session wrote it (see `MemoryStoreOptions.user`); `''` for rows from before user identities. */
  createdBy: string
}

/** Input of {@link SceneRepository.add}. */
export interface AddSceneInput {
  title: string
  summary: string
  scope: Scope
  workspace?: string | null
  sessionId?: string | null
  memoryIds?: string[]
  flags?: Flags
  createdAt?: number
}

/** Patch of {@link SceneRepository.update}. */
export interface UpdateScenePatch {
  title?: string
  summary?: string
  memoryIds?: string[]
  flags?: Flags
}

/** Filter of {@link SceneRepository.list}; scope rules as in {@link MemoryScopeFilter} (scenes have no kind and no history). */
export interface SceneFilter extends Pick<MemoryScopeFilter, 'scope' | 'workspace' | 'sessionId' | 'includeGlobal' | 'since' | 'until'>, PageOptions {}

/** L2 scene repository. */
export interface SceneRepository {
  add(input: AddSceneInput, options?: WriteOptions): Promise<Scene>
  get(id: string): Promise<Scene | undefined>
  /** @throws MemoryStoreError `not-found` */
  update(id: string, patch: UpdateScenePatch, options?: WriteOptions): Promise<Scene>
  /** @returns false when it did not exist. */
  delete(id: string, options?: WriteOptions): Promise<boolean>
  /** Newest updated first. */
  list(filter?: SceneFilter): Promise<Scene[]>
}
