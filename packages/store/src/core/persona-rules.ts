/**
 * Which persona row answers for a key, and where a put writes, as one session user sees it
 * (pure: the SQLite and PostgreSQL repositories share it). A workspace's persona is one row the
 * team shares. The global persona is private: each user has their own (`owner` = the user);
 * the unattributed one from before user identities (`owner` = `''`) answers for a user until
 * they write their own, and is never overwritten by them (other users still see it).
 */
import { personaOwnerOf, type PersonaRowKey } from './record-values.ts'

/** A stored persona row (either backend's). */
export interface PersonaRow extends PersonaRowKey {
  text: string
  version: number
  updatedAt: number
  createdBy: string
}

/** The stored keys that may answer for `key` as `user` sees it: the unattributed row, and (global) the user's own. */
export function personaRowKeys(key: { scope: 'global' | 'workspace'; workspace: string }, user: string): PersonaRowKey[] {
  const shared = { ...key, owner: '' }
  return key.scope === 'global' && user !== '' ? [shared, { ...key, owner: user }] : [shared]
}

/** The row `user` sees among the candidates of one key: their own global persona first, else the unattributed one. */
export function shownPersona<Row extends PersonaRow>(rows: readonly Row[], user: string): Row | undefined {
  return rows.find((row) => row.owner !== '' && row.owner === user) ?? rows.find((row) => row.owner === '')
}

/**
 * Where `user`'s put of `key` writes, given the row they see now: their own row (global) or the
 * workspace's; `existing` when that row is the one they see (an update keeps its author).
 */
export function personaTarget(key: { scope: 'global' | 'workspace'; workspace: string }, user: string, shown: PersonaRow | undefined): { target: PersonaRowKey; existing: boolean; createdBy: string } {
  const target = { ...key, owner: personaOwnerOf(key.scope, user) }
  const existing = shown !== undefined && shown.owner === target.owner
  return { target, existing, createdBy: existing ? shown.createdBy : user }
}

/** The rows `user` sees in a list (in the given order): every workspace persona, and one global persona at most. */
export function visiblePersonaRows<Row extends PersonaRow>(rows: readonly Row[], user: string): Row[] {
  const ownGlobal = rows.some((row) => row.scope === 'global' && row.owner !== '' && row.owner === user)
  return rows.filter((row) => row.scope === 'workspace' || (ownGlobal ? row.owner === user : row.owner === ''))
}
