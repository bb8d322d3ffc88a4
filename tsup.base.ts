import { defineConfig, type Options } from 'tsup'

/**
 * The build every workspace package shares: ESM for Node 22 with declarations and source maps.
 * Workspace siblings and the host's packages stay imports (they are peers at run time, never
 * bundled). A package passes only what differs: its entries and any extra externals.
 */
export function packageBuild(options: Options & { entry: string[] }): ReturnType<typeof defineConfig> {
  return defineConfig({
    format: ['esm'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node22',
    ...options,
    external: [/^@deepseek-ai\//, /^@dsh-memory\//, ...(options.external ?? [])],
  })
}
