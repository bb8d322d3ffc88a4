#!/usr/bin/env node
// Rewrite cordis.patch.yml from the plugins' own bundle patches: each child row of the preset
// gets exactly the config of its plugin's own row (`memory-<id>` in packages/<id>/cordis.patch.yml).
// Run it after a plugin changes its bundle patch: `node packages/preset/scripts/sync-patch.mjs`
// (the preset test fails, naming the plugin, until the two agree).
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const presetDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const packagesDir = join(presetDir, '..')
const target = join(presetDir, 'cordis.patch.yml')
const PLUGINS = {
  capture: 'L0: every human prompt and assistant reply into the store (emits memory-capture/captured).',
  distill: 'L1 memories, L2 scenes, L3 persona through the host model, in the background.',
  recall: 'memories in front of the model each step, persona/scene sections, memory tools, /memory.',
  'cue-bank': 'topic-switch detection and cue re-activation across sessions (tool cue_bank_open).',
  palace: 'verbatim archive of turns by category before compaction (palace_* tools).',
  tree: 'memory tree: chit-chat isolation, project mainline section, branches and merges (mt_* tools).',
}

const current = readFileSync(target, 'utf8')
const marker = '        # @dsh-memory/capture:'
const head = current.slice(0, current.indexOf(marker))
if (!head) throw new Error(`${target}: cannot find "${marker}"`)
const out = [head.trimEnd()]
for (const [id, what] of Object.entries(PLUGINS)) {
  const lines = readFileSync(join(packagesDir, id, 'cordis.patch.yml'), 'utf8').split('\n')
  const start = lines.findIndex((line) => line.trim() === `- id: memory-${id}`)
  if (start < 0) throw new Error(`packages/${id}/cordis.patch.yml has no row memory-${id}`)
  const indent = lines[start].length - lines[start].trimStart().length
  const block = [lines[start]]
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '' || line.length - line.trimStart().length <= indent) break
    block.push(line)
  }
  out.push(`        # @dsh-memory/${id}: ${what}`)
  // Re-indent under the group's `config:` and give the child its preset id.
  for (const [index, line] of block.entries()) {
    const moved = ' '.repeat(8) + line.slice(indent)
    out.push(index === 0 ? moved.replace(`memory-${id}`, `memory-preset-${id}`) : moved)
  }
}
writeFileSync(target, `${out.join('\n')}\n`)
process.stdout.write(`wrote ${target}\n`)
