#!/usr/bin/env node
// The `dsh-memory` executable: a committed shim, not `dist/bin.js` itself, because npm links a
// workspace's bins during `npm ci`, before the build exists, and silently skips a bin whose
// file is missing — so in a fresh clone `npx dsh-memory` found nothing (or the registry).
import { existsSync } from 'node:fs'

const entry = new URL('../dist/bin.js', import.meta.url)
if (!existsSync(entry)) {
  process.stderr.write('dsh-memory is not built yet: run `npm run setup` (or `npm run build`) in the checkout\n')
  process.exit(1)
}
await import(entry.href)
