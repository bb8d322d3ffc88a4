import { afterEach, describe, expect, it } from 'vitest'
import { isRecallError } from '../src/core/errors.ts'
import { injectionActive, modePolicy, policyAllows, SessionSettingsRepository, settingsLabel } from '../src/core/session-modes.ts'
import { tempStore } from './support/store.ts'

describe('session settings', () => {
  let handle: ReturnType<typeof tempStore> | undefined
  afterEach(async () => {
    await handle?.cleanup()
    handle = undefined
  })

  it('are per session id and survive closing and reopening the database', async () => {
    handle = tempStore()
    const repo = new SessionSettingsRepository(handle.store.meta, { mode: 'auto', inject: 'follow' }, () => 1234)
    expect(await repo.get('s1')).toEqual({ mode: 'auto', inject: 'follow', updatedAt: null })
    await repo.update('s1', { mode: 'work' })
    await repo.update('s1', { inject: 'off' })
    const reopened = await handle.reopen()
    const again = new SessionSettingsRepository(reopened.meta, { mode: 'auto', inject: 'follow' })
    expect(await again.get('s1')).toEqual({ mode: 'work', inject: 'off', updatedAt: 1234 })
    expect(await again.get('s2')).toEqual({ mode: 'auto', inject: 'follow', updatedAt: null })
  })

  it('rejects unknown values and reports a damaged record with a stable code', async () => {
    handle = tempStore()
    const repo = new SessionSettingsRepository(handle.store.meta, { mode: 'auto', inject: 'follow' })
    await expect(repo.update('s1', { mode: 'loud' as never })).rejects.toMatchObject({ code: 'invalid-argument' })
    await handle.store.meta.set('recall.session.s1', JSON.stringify({ version: 99, mode: 'auto', inject: 'on', updatedAt: 1 }))
    await expect(repo.get('s1')).rejects.toSatisfy((error: unknown) => isRecallError(error, 'corrupt-state'))
    // An explicit choice replaces the damaged record.
    await repo.update('s1', { mode: 'chat' })
    expect((await repo.get('s1')).mode).toBe('chat')
  })
})

describe('mode policies', () => {
  it('define what each mode admits', () => {
    const memory = (scope: string, kind: string) => ({ scope, kind })
    expect(policyAllows(modePolicy('auto'), memory('global', 'preference'))).toBe(true)
    expect(policyAllows(modePolicy('work'), memory('global', 'preference'))).toBe(false)
    expect(policyAllows(modePolicy('work'), memory('global', 'instruction'))).toBe(true)
    expect(policyAllows(modePolicy('work'), memory('workspace', 'episode'))).toBe(true)
    expect(policyAllows(modePolicy('chat'), memory('workspace', 'fact'))).toBe(false)
    expect(policyAllows(modePolicy('chat'), memory('workspace', 'preference'))).toBe(true)
    expect(policyAllows(modePolicy('chat'), memory('session', 'preference'))).toBe(true)
    expect(policyAllows(modePolicy('off'), memory('global', 'instruction'))).toBe(false)
    expect(modePolicy('work')).toMatchObject({ globalPersona: false, workspacePersona: true })
    expect(modePolicy('chat')).toMatchObject({ globalPersona: true, workspaceScenes: false })
  })

  it('the inject switch: follow obeys the config, on overrides it, off is write-only', () => {
    expect(injectionActive({ mode: 'auto', inject: 'follow' }, true)).toBe(true)
    expect(injectionActive({ mode: 'auto', inject: 'follow' }, false)).toBe(false)
    expect(injectionActive({ mode: 'auto', inject: 'on' }, false)).toBe(true)
    expect(injectionActive({ mode: 'auto', inject: 'off' }, true)).toBe(false)
    expect(injectionActive({ mode: 'off', inject: 'on' }, true)).toBe(false)
    expect(settingsLabel({ mode: 'work', inject: 'follow' }, true)).toBe('memory·work')
    expect(settingsLabel({ mode: 'work', inject: 'off' }, true)).toBe('memory·write-only')
    expect(settingsLabel({ mode: 'off', inject: 'on' }, true)).toBe('memory·off')
  })
})
