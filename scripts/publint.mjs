// publint --strict on one package, with the one exception the DSH host requires.
// A package's browser half (`dsh.client`, the `./client` export) is the host's lazy-CJS factory
// bundle (`window.__ModuleLoader__.load({ factory: (require) => { var module = … } })`), a
// browser script the host's module loader evaluates and Node never imports. publint reads its
// `module.exports` as CommonJS in a `.js` file of an ESM package; the host's own browser bundles
// (e.g. @deepseek-ai/dsh-client-ui-goal's `./client`) have the same shape and extension.
// Usage: node scripts/publint.mjs <package dir>
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'

const dir = process.argv[2]
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
const { messages } = await publint({ pkgDir: dir, strict: true, pack: 'npm' })
const hostBundle = (message) =>
  pkg.dsh?.client !== undefined && message.code === 'FILE_INVALID_FORMAT' && message.path.join('.') === 'exports../client'
let failed = false
for (const message of messages) {
  if (hostBundle(message)) {
    console.log(`(host browser bundle, allowed) ${formatMessage(message, pkg)}`)
    continue
  }
  // --strict: warnings fail like errors; suggestions are printed only.
  if (message.type !== 'suggestion') failed = true
  console.log(`${message.type}: ${formatMessage(message, pkg)}`)
}
if (failed) process.exit(1)
console.log(`publint: ${pkg.name} ok`)
