import { defineConfig } from 'tsup'
import { packageBuild } from '../../tsup.base.ts'

/**
 * Two builds: the Node package (library + host plugin, ESM), and the browser half for DSH's
 * web client in the host's lazy-CJS factory format — a CommonJS bundle of our own code
 * wrapped in `window.__ModuleLoader__.load({ id, factory: (require) => … })`, whose
 * `require` the host answers with its own React and Cordis (so those stay external).
 */
const BUNDLE_ID = '@dsh-memory/web'
const HOST_SUPPLIED = ['react', 'react/jsx-runtime', 'react-dom', 'react-dom/client', '@deepseek-ai/cordis', '@deepseek-ai/dsh-client-ui-slots', '@deepseek-ai/dsh-client-ui-primitives']

export default [
  // Both builds write into dist/ (turbo caches dist/**); the Node build cleans all but the browser half.
  packageBuild({ entry: ['src/index.ts', 'src/plugin.ts'], clean: ['**/*', '!browser/**'] }),
  defineConfig({
    entry: { client: 'src/client/index.tsx' },
    outDir: 'dist/browser',
    format: ['cjs'],
    platform: 'browser',
    target: 'es2022',
    clean: false,
    dts: false,
    sourcemap: false,
    minify: false,
    external: HOST_SUPPLIED,
    noExternal: [/^(?!react|react-dom|@deepseek-ai\/).*/],
    outExtension: () => ({ js: '.js' }),
    esbuildOptions(options) {
      options.jsx = 'automatic'
    },
    banner: { js: `window.__ModuleLoader__.load({ id: ${JSON.stringify(BUNDLE_ID)}, factory: (require) => { var module = { exports: {} }; var exports = module.exports;` },
    footer: { js: 'return module.exports } })' },
  }),
]
