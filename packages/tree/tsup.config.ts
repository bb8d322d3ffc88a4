import { packageBuild } from '../../tsup.base.ts'

export default packageBuild({
  // index: the core library; plugin: the DSH adapter; mcp: the dsh-memory-tree-mcp binary.
  entry: ['src/index.ts', 'src/plugin.ts', 'src/mcp.ts'],
  dts: { entry: ['src/index.ts', 'src/plugin.ts'] },
  external: [/^@modelcontextprotocol\//, 'zod'],
})
