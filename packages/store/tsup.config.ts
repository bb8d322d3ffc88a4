import { packageBuild } from '../../tsup.base.ts'

export default packageBuild({ entry: ['src/index.ts', 'src/plugin.ts', 'src/kit/index.ts'], external: ['better-sqlite3'] })
