import { describe, expect, it } from 'vitest'
import { isProfileRootRace } from '../src/host.js'

// The first line of what the pinned host printed when two launches of one profile started together
// (seen in CI): one read the profile's root cordis.yml while the other was rewriting it.
const RACE = [
  'Error: dsh: plugin tree failed to load: failed to apply loader entry include (cordis:include): failed to validate config file /tmp/dshm-x/dsh-home/profiles/concurrent/cordis.yml',
  'TypeError: config file must be a top-level array',
].join('\n')

describe('isProfileRootRace', () => {
  it('matches only a failed launch that read the profile root empty', () => {
    expect(isProfileRootRace(1, RACE)).toBe(true)
    expect(isProfileRootRace(0, RACE)).toBe(false)
    // A broken user patch layer is a real error, not the race.
    expect(isProfileRootRace(1, 'failed to validate config file /tmp/x/overlay-1.yml\nTypeError: config file must be a top-level array')).toBe(false)
    expect(isProfileRootRace(1, 'Error: dsh: plugin memory-store failed to load: config.dataDir: expected string')).toBe(false)
  })
})
