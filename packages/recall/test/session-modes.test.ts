import { describe, expect, it } from 'vitest'
import { injectionActive, modePolicy, policyAllows, settingsLabel } from '../src/core/session-modes.ts'
import { SessionSettingsRepository } from '../src/core/session-settings.ts'
import { backends } from '../../store/test/contract/backends.ts'

describe.each(backends)('session settings ($name)', (backend) => {
  it('are per session id and survive closing and reopening the database', async () => {
    const store = await backend.open()
    const repo = new SessionSettingsRepository(store, { mode: 'auto', inject: 'follow' }, () => 1234)
    expect(await repo.get('s1')).toEqual({ mode: 'auto', inject: 'follow', updatedAt: null })
    await repo.update('s1', { mode: 'work' })
    await repo.update('s1', { inject: 'off' })
    await store.close()
    const reopened = await backend.reopen(store)
    const again = new SessionSettingsRepository(reopened, { mode: 'auto', inject: 'follow' })
    expect(await again.get('s1')).toEqual({ mode: 'work', inject: 'off', updatedAt: 1234 })
    expect(await again.get('s2')).toEqual({ mode: 'auto', inject: 'follow', updatedAt: null })
    // Kept in recall's own table, not as JSON in the store's meta table.
    expect(await reopened.meta.list('recall.')).toEqual([])
    expect((await reopened.audit.list({ entity: 'recall' as never })).map((entry) => entry.op)).toEqual(['recall.session-settings.set', 'recall.session-settings.set'])
  })

  it('keep Chinese and Japanese session ids apart', async () => {
    const repo = new SessionSettingsRepository(await backend.open(), { mode: 'auto', inject: 'follow' }, () => 5)
    await repo.update('会话-一', { mode: 'chat' })
    await repo.update('セッション-二', { inject: 'off' })
    expect(await repo.get('会话-一')).toEqual({ mode: 'chat', inject: 'follow', updatedAt: 5 })
    expect(await repo.get('セッション-二')).toEqual({ mode: 'auto', inject: 'off', updatedAt: 5 })
  })

  it('rejects unknown values with a stable code and the field, and writes nothing', async () => {
    const repo = new SessionSettingsRepository(await backend.open(), { mode: 'auto', inject: 'follow' })
    await repo.update('s1', { mode: 'work' })
    await expect(repo.update('s1', { mode: 'loud' as never })).rejects.toMatchObject({ code: 'invalid-argument', path: 'mode' })
    await expect(repo.update('s1', { inject: 'sometimes' as never })).rejects.toMatchObject({ code: 'invalid-argument', path: 'inject' })
    expect((await repo.get('s1')).mode).toBe('work')
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
