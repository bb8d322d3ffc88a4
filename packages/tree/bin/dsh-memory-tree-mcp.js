#!/usr/bin/env node
// `dsh-memory-tree-mcp`: committed so that `npm ci` can link it in a fresh clone. npm links
// workspace bins before the build runs and drops those whose target does not exist yet, so
// pointing `bin` at dist/mcp.js left `npx dsh-memory-tree-mcp` unresolved after setup.
import { existsSync } from 'node:fs'

const server = new URL('../dist/mcp.js', import.meta.url)
if (existsSync(server)) await import(server.href)
else {
  process.stderr.write('dsh-memory-tree-mcp is not built yet: run `npm run setup` (or `npm run build`) in the checkout\n')
  process.exit(1)
}
