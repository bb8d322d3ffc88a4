import { describe, expect, it } from 'vitest'
import { coordinatedStore, isCoordinatedStore, layerKeyOf, parseLayerKey } from '../../src/index.ts'
import type { LayerKey } from '../../src/index.ts'
import { rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

const GLOBAL: LayerKey = { scope: 'global' }
const ALPHA: LayerKey = { scope: 'workspace', workspace: '/work/alpha' }

describe.each(backends)('layer revisions ($name)', (backend) => {
  it('keys: layerKeyOf / parseLayerKey and bad input', async () => {
    expect(layerKeyOf(GLOBAL)).toBe('global')
    expect(layerKeyOf(ALPHA)).toBe('workspace:/work/alpha')
    expect(parseLayerKey('workspace:/a:b')).toEqual({ scope: 'workspace', workspace: '/a:b' })
    expect(parseLayerKey('session:x')).toBeUndefined()
    const store = await backend.open()
    expect((await rejectionOf(store.layers.revision({ scope: 'workspace' }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.layers.revision({ scope: 'session' } as never))).code).toBe('invalid-argument')
    expect(isCoordinatedStore(store)).toBe(true)
    expect(coordinatedStore({ store } as never)).toBe(store)
    expect(() => coordinatedStore({} as never)).toThrow(/does not track layer revisions/)
  })

  it('a layer that never changed is at revision 0; list shows global first, then workspaces in code-point order', async () => {
    const store = await backend.open()
    expect(await store.layers.revision(ALPHA)).toEqual({ scope: 'workspace', workspace: '/work/alpha', key: 'workspace:/work/alpha', revision: 0, updatedAt: 0 })
    expect(await store.layers.list()).toEqual([])
    // Rows as another process's writes leave them (the bumps themselves come with memory writes).
    await backend.sql(
      store,
      `INSERT INTO store_layer_revisions (layer_key, revision, updated_at) VALUES ('workspace:/work/beta', 2, 20), ('workspace:/work/Zeta', 1, 10), ('global', 3, 30), ('workspace:/work/项目', 1, 40), ('not-a-layer', 1, 1)`,
    )
    const other = await backend.reopen(store)
    expect((await other.layers.list()).map((layer) => [layer.key, layer.revision])).toEqual([
      // The unattributed global part shows as the reader's own global layer.
      [`global:${other.user}`, 3],
      ['workspace:/work/Zeta', 1],
      ['workspace:/work/beta', 2],
      ['workspace:/work/项目', 1],
    ])
    expect(await store.layers.revision({ scope: 'workspace', workspace: ' /work/beta ' })).toMatchObject({ revision: 2, updatedAt: 20 })
  })
})
