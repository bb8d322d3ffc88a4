import { defineConfig } from 'tsup'

export default defineConfig({
  // index: the core library; plugin: the DSH adapter; mcp: the dsh-memory-tree-mcp binary.
  entry: ['src/index.ts', 'src/plugin.ts', 'src/mcp.ts'],
  format: ['esm'],
  dts: { entry: ['src/index.ts', 'src/plugin.ts'] },
  clean: true,
  sourcemap: true,
  target: 'node22',
  external: [/^@deepseek-ai\//, /^@dsh-memory\//, /^@modelcontextprotocol\//, 'zod'],
})
