/**
 * What a successful model tool call changed, as the facts recall announces: a memory added
 * or deleted by the model, each memory an import added, a rating. The adapter emits them as
 * `memory-recall/memory-changed` and `memory-recall/feedback` (see `events.ts`) after the write committed.
 */

/** One fact to announce. */
export type ToolFact =
  | { readonly kind: 'memory-changed'; readonly op: 'add' | 'delete'; readonly id: string; readonly sessionId: string; readonly actor: 'model' }
  | { readonly kind: 'feedback'; readonly sessionId: string; readonly memoryId: string; readonly rating: 'helpful' | 'unhelpful' | 'incorrect'; readonly review: boolean }

/** The facts of tool `name`'s result `value` in session `sessionId` (none for read-only tools). */
export function toolFacts(name: string, value: unknown, sessionId: string): ToolFact[] {
  const changed = (op: 'add' | 'delete', id: string): ToolFact => ({ kind: 'memory-changed', op, id, sessionId, actor: 'model' })
  // memory_add answers { id }, memory_delete { deleted }.
  const written = () => (value as { id?: string }).id ?? (value as { deleted?: string }).deleted ?? ''
  switch (name) {
    case 'memory_add':
      return [changed('add', written())]
    case 'memory_delete':
      return [changed('delete', written())]
    case 'memory_import':
      return (value as { memories: { id?: string }[] }).memories.flatMap((memory) => (memory.id ? [changed('add', memory.id)] : []))
    case 'memory_feedback': {
      const rated = value as { id: string; rating: 'helpful' | 'unhelpful' | 'incorrect'; review: boolean }
      return [{ kind: 'feedback', sessionId, memoryId: rated.id, rating: rated.rating, review: rated.review }]
    }
    default:
      return []
  }
}
