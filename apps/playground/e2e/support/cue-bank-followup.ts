import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A headless run is one prompt, and headless has no resume flag. To continue a session the
 * way a person does (more prompts in the same session), this tiny host plugin sends the next
 * prompt of its list through the public Agent API (`agent.followup`, exactly what the headless
 * runner does with the first prompt) each time a turn is about to close. The runner waits for
 * the agent to go idle, so every follow-up turn runs in the same session.
 *
 * The plugin is written as a plain `.mjs` file for the host to load by absolute path.
 */
const SOURCE = `import { randomUUID } from 'node:crypto'

export const name = 'e2e-cue-bank-followup'

export function apply(ctx, config) {
  const pending = Array.isArray(config?.texts) ? [...config.texts] : []
  ctx.on('agent/turn-stopping', ({ agent }) => {
    const text = pending.shift()
    if (typeof text !== 'string') return
    agent.followup(Object.freeze({
      id: randomUUID(),
      role: 'user',
      content: Object.freeze([Object.freeze({ type: 'text', text })]),
      source: Object.freeze({ kind: 'user' }),
    }))
  })
}
`

/** Write the follow-up plugin into `dir`; returns its absolute path. */
export async function writeFollowupPlugin(dir: string): Promise<string> {
  const path = join(dir, 'cue-bank-followup.mjs')
  await writeFile(path, SOURCE)
  return path
}

/** The `--patch` overlay that mounts the follow-up plugin with the prompts after the first. */
export function followupOverlay(pluginPath: string, texts: readonly string[]): string {
  return [
    '- insert:',
    '    - id: e2e-cue-bank-followup',
    `      name: '${pluginPath}'`,
    '      config:',
    '        texts:',
    ...texts.map((text) => `          - ${JSON.stringify(text)}`),
    '',
  ].join('\n')
}
