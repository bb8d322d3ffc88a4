import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), '..', 'lint-imports.mjs')
const run = promisify(execFile)

let root: string | undefined

afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true })
  root = undefined
})

/** Write a fixture tree (path → source) under a fresh temp dir and return the dir. */
async function tree(files: Record<string, string>): Promise<string> {
  root = await mkdtemp(join(tmpdir(), 'lint-imports-'))
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true })
    await writeFile(join(root, path), text)
  }
  return root
}

/** Run the lint on `dir`: its exit code and everything it printed. */
async function lint(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, '--root', dir])
    return { code: 0, output: stdout + stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, output: failed.stdout + failed.stderr }
  }
}

const CLEAN = {
  'packages/a/src/index.ts': "export { add } from './core/math.ts'\nexport type { Plugin } from './plugin.ts'\n",
  'packages/a/src/core/math.ts': 'export const add = (x: number, y: number): number => x + y\n',
  'packages/a/src/plugin.ts': "import type { Context } from '@deepseek-ai/cordis'\nimport { add } from './core/math.ts'\nexport type Plugin = (ctx: Context) => number\nexport const plugin: Plugin = () => add(1, 2)\n",
  'packages/a/test/math.test.ts': "import { add } from '../src/core/math.ts'\nexport const three = add(1, 2)\n",
  'packages/b/src/one.ts': "import { two } from './two.js'\nexport const one = two + 1\n",
  'packages/b/src/two.ts': 'export const two = 2\n',
}

describe('scripts/lint-imports.mjs on fixture trees', () => {
  it('passes a clean tree (host imports in the adapter, one suffix per package)', async () => {
    const { code, output } = await lint(await tree(CLEAN))
    expect(output).toContain('clean')
    expect(code).toBe(0)
  })

  it('fails on a host import under src/core, type-only included', async () => {
    const { code, output } = await lint(await tree({ ...CLEAN, 'packages/a/src/core/math.ts': "import type { Context } from '@deepseek-ai/cordis'\nexport const add = (x: number, y: number, _ctx?: Context): number => x + y\n" }))
    expect(code).toBe(1)
    expect(output).toMatch(/core-imports-host: packages\/a\/src\/core\/math\.ts imports .*@deepseek-ai\/cordis/)
  })

  it('fails on an import cycle made only of type imports', async () => {
    const { code, output } = await lint(
      await tree({
        ...CLEAN,
        'packages/b/src/one.ts': "import type { Two } from './two.js'\nexport interface One { two?: Two }\n",
        'packages/b/src/two.ts': "import type { One } from './one.js'\nexport interface Two { one?: One }\n",
      }),
    )
    expect(code).toBe(1)
    expect(output).toMatch(/import-cycle: packages\/b\/src\/(one|two)\.ts -> packages\/b\/src\/(one|two)\.ts/)
  })

  it('fails on mixed relative import suffixes within a package, naming both', async () => {
    const { code, output } = await lint(await tree({ ...CLEAN, 'packages/a/test/math.test.ts': "import { add } from '../src/core/math.js'\nexport const three = add(1, 2)\n" }))
    expect(code).toBe(1)
    expect(output).toMatch(/mixed-import-suffix: packages\/a uses \.ts and \.js/)
  })
})
