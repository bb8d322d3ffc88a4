import { describe, expect, it } from 'vitest'
import { withinBudget } from '../src/core/budget.ts'

describe('withinBudget', () => {
  it('returns the value of work that finishes in time', async () => {
    await expect(withinBudget(async () => 42, 1000)).resolves.toMatchObject({ ok: true, value: 42 })
  })

  it('gives up at the budget and reports a late failure instead of leaking a rejection', async () => {
    let release!: (error: Error) => void
    const late: unknown[] = []
    const outcome = await withinBudget(
      () => new Promise<never>((_, reject) => (release = reject)),
      50,
      (error) => late.push(error),
    )
    expect(outcome).toMatchObject({ ok: false, reason: 'timeout' })
    // It answered while the work was still pending: the late failure has not happened yet.
    expect(late).toHaveLength(0)
    release(new Error('too late'))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(late).toHaveLength(1)
  })

  it('turns a failure into an outcome, and 0 means no limit', async () => {
    await expect(withinBudget(async () => Promise.reject(new Error('x')), 1000)).resolves.toMatchObject({ ok: false, reason: 'error' })
    await expect(withinBudget(() => new Promise((resolve) => setTimeout(() => resolve('slow'), 30)), 0)).resolves.toMatchObject({ ok: true, value: 'slow' })
  })
})
