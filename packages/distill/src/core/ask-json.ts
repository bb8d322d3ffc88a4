/** The JSON ask shared by the L1, dedup and L2 jobs: one retry with the validation error. */
import { parseModelJson } from './json.js'
import type { JobContext } from './job-context.js'
import type { DistillLayer } from './options.js'
import { retryNote } from './prompts.js'

/**
 * Ask for JSON and validate it; on a parse or schema failure ask once more with the error.
 * Model outages propagate (the caller retries the slice later).
 */
export async function askJson<T>(
ctx: Pick<JobContext, 'model' | 'signal' | 'log'>,
  layer: DistillLayer,
  system: string,
  prompt: string,
  conversationId: string | undefined,
  validate: (value: unknown) => { ok: true; items: readonly T[]; rejected: readonly { index: number; reason: string }[] } | { ok: false; error: string },
): Promise<{ ok: true; items: readonly T[] } | { ok: false; error: string }> {
  let error = ''
  for (let attempt = 0; attempt < 2; attempt++) {
    const reply = await ctx.model.complete(layer, { system, prompt: attempt === 0 ? prompt : prompt + retryNote(error) }, ctx.signal, conversationId)
    const parsed = parseModelJson(reply.text, 'object')
    if (!parsed.ok) {
      error = parsed.error
    } else {
      if (parsed.repairs.length) ctx.log('debug', `${layer} reply repaired (${parsed.repairs.join(', ')})`)
      const validated = validate(parsed.value)
      if (validated.ok) {
        if (validated.rejected.length) {
          ctx.log('warn', `${layer}: dropped ${validated.rejected.length} invalid item(s) from the model reply (${validated.rejected[0]!.reason})`)
        }
        return { ok: true, items: validated.items }
      }
      error = validated.error
    }
    ctx.log('warn', `${layer}: invalid model reply (${error})${attempt === 0 ? ', asking once more' : ''}`)
  }
  return { ok: false, error }
}
