import { packageBuild } from '../../tsup.base.ts'

// The MiniLM worker is an entry of its own (a worker thread loads it by URL); the provider's
// packages are optional peers, loaded at run time from the user's install, never bundled.
export default packageBuild({ entry: ['src/index.ts', 'src/plugin.ts', 'src/minilm-worker.ts'], external: [/^@lat\.md\//] })
