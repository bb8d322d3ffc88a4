/** L3 of the store contract: one versioned persona document per key. */
import type { WriteOptions } from './types-common.ts'

/**
 * Which persona document: the global one (the session user's own; while they have none, the
 * unattributed one from before user identities) or one workspace's (the team's).
 */
export interface PersonaKey {
  scope: 'global' | 'workspace'
  /** Required for workspace scope. */
  workspace?: string | null
}

/** An L3 persona document: markdown describing the user, one per key. */
export interface Persona {
  scope: 'global' | 'workspace'
  workspace: string | null
  text: string
  /** 1 on first put, +1 on every put. */
  version: number
  updatedAt: number
  /** Who wrote it first (kept by later puts); `''` before user identities. A global persona is private to its user. */
  createdBy: string
}

/** Input of {@link PersonaRepository.put}. */
export interface PutPersonaInput extends PersonaKey {
  text: string
  /** When given, the put fails with `conflict` unless the stored version equals it (0 = absent). */
  expectedVersion?: number
}

/** L3 persona repository. */
export interface PersonaRepository {
  get(key: PersonaKey): Promise<Persona | undefined>
  /** Replace the document, bumping `version`. @throws MemoryStoreError `conflict` on a stale `expectedVersion` */
  put(input: PutPersonaInput, options?: WriteOptions): Promise<Persona>
  list(): Promise<Persona[]>
  /** @returns false when it did not exist. */
  delete(key: PersonaKey, options?: WriteOptions): Promise<boolean>
}
