import { Context } from '@deepseek-ai/cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { emitRenamed, onRenamed, type EventAliases } from '../src/kit/index.ts'

// The host's event map does not know these names; address the real context by name.
type Bus = { emit(name: string, ...args: unknown[]): void; on(name: string, listener: (...args: any[]) => unknown): () => unknown }

const ALIASES: EventAliases = Object.freeze({ 'memory-demo/changed': 'demo/changed' })

describe('kit: renamed events on a real Cordis context', () => {
  let root: Context
  let bus: Bus

  beforeEach(() => {
    root = new Context()
    bus = root as unknown as Bus
  })
  afterEach(async () => {
    await root.fiber.dispose()
  })

  it('emitRenamed: a listener on the new name and one on the deprecated name each get the event exactly once', () => {
    const heard: [string, unknown][] = []
    bus.on('memory-demo/changed', (event) => void heard.push(['new', event]))
    bus.on('demo/changed', (event) => void heard.push(['old', event]))
    const event = { id: '記憶-1' }
    emitRenamed(bus, ALIASES, 'memory-demo/changed', event)
    expect(heard).toEqual([
      ['new', event],
      ['old', event],
    ])
    expect(heard[1]![1]).toBe(heard[0]![1])
  })

  it('emitRenamed: a name without an alias is emitted once', () => {
    const heard: unknown[] = []
    bus.on('memory-demo/other', (event) => void heard.push(event))
    emitRenamed(bus, ALIASES, 'memory-demo/other', { n: 1 })
    expect(heard).toEqual([{ n: 1 }])
  })

  it('emitRenamed: a throwing listener of the new name does not keep the event from the deprecated name; the error is rethrown after', () => {
    const old: unknown[] = []
    bus.on('memory-demo/changed', () => {
      throw new Error('listener bug')
    })
    bus.on('demo/changed', (event) => void old.push(event))
    expect(() => emitRenamed(bus, ALIASES, 'memory-demo/changed', { id: 'x' })).toThrow('listener bug')
    expect(old).toEqual([{ id: 'x' }])
  })

  it('onRenamed: runs once per event whether it came under both names (ours), the old one or the new one (external code)', () => {
    const handled: unknown[] = []
    onRenamed(bus, ALIASES, 'memory-demo/changed', (event) => void handled.push(event))
    emitRenamed(bus, ALIASES, 'memory-demo/changed', { from: 'ours' })
    bus.emit('demo/changed', { from: 'old plugin' })
    bus.emit('memory-demo/changed', { from: 'new plugin' })
    expect(handled).toEqual([{ from: 'ours' }, { from: 'old plugin' }, { from: 'new plugin' }])
  })

  it('onRenamed: the same payload emitted twice under one name is handled twice, and the disposer removes both listeners', () => {
    const handled: unknown[] = []
    const dispose = onRenamed(bus, ALIASES, 'memory-demo/changed', (event) => void handled.push(event))
    const event = { id: 'again' }
    bus.emit('memory-demo/changed', event)
    bus.emit('memory-demo/changed', event)
    expect(handled).toHaveLength(2)
    dispose()
    bus.emit('memory-demo/changed', { id: 'late' })
    bus.emit('demo/changed', { id: 'late' })
    expect(handled).toHaveLength(2)
  })
})
