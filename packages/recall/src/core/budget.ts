/**
 * Time budgets. Recall must never delay a turn beyond its budget: the work races a timer and
 * the turn goes on without it when the timer wins (the work finishes or fails in the
 * background; its rejection is observed so it can never become an unhandled rejection).
 */

/** Outcome of {@link withinBudget}. */
export type BudgetOutcome<T> = { readonly ok: true; readonly value: T; readonly ms: number } | { readonly ok: false; readonly reason: 'timeout' | 'error'; readonly error?: unknown; readonly ms: number }

/**
 * Run `work` against a `budgetMs` timer (0 = no limit). Never rejects.
 * @param onLateError - receives an error the work raised after the timer had already won.
 */
export async function withinBudget<T>(work: () => Promise<T>, budgetMs: number, onLateError?: (error: unknown) => void): Promise<BudgetOutcome<T>> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  let settled = false
  const running = Promise.resolve()
    .then(work)
    .then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => {
        if (settled) onLateError?.(error)
        return { ok: false as const, reason: 'error' as const, error }
      },
    )
  if (!(budgetMs > 0)) {
    const result = await running
    settled = true
    return { ...result, ms: elapsed() }
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<{ ok: false; reason: 'timeout' }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: 'timeout' }), budgetMs)
    // A pending recall must not keep a headless process alive.
    timer.unref?.()
  })
  try {
    const result = await Promise.race([running, timeout])
    return { ...result, ms: elapsed() }
  } finally {
    settled = true
    clearTimeout(timer)
  }
}
