/**
 * Reading one memory on demand (`memory_read`): short memories whole, long ones as a chunk
 * manifest first and then chunk by chunk, so the model pays only for what it reads.
 */
import { estimateTokens } from '@dsh-memory/store'
import { memoryTitle } from './layers.ts'

/** One chunk of a long text. */
export interface TextChunk {
  /** 1-based. */
  readonly index: number
  readonly text: string
}

/**
 * Split `text` into chunks of at most `size` code points, cutting at the last paragraph break,
 * line break or space in the final fifth of a chunk when there is one (so words stay whole).
 * Deterministic: the same text and size always give the same chunks.
 */
export function chunkText(text: string, size: number): TextChunk[] {
  const chars = [...text]
  const chunks: TextChunk[] = []
  let start = 0
  while (start < chars.length) {
    let end = Math.min(chars.length, start + size)
    if (end < chars.length) {
      const floor = start + Math.floor(size * 0.8)
      for (const separator of ['\n\n', '\n', ' ']) {
        let cut = -1
        for (let i = end; i > floor; i--) {
          if (chars.slice(i - separator.length, i).join('') === separator) {
            cut = i
            break
          }
        }
        if (cut > 0) {
          end = cut
          break
        }
      }
    }
    chunks.push({ index: chunks.length + 1, text: chars.slice(start, end).join('') })
    start = end
  }
  return chunks.length > 0 ? chunks : [{ index: 1, text: '' }]
}

/** The manifest of a long memory: what `memory_read` answers before any chunk is asked for. */
export interface ChunkManifest {
  readonly chars: number
  readonly tokens: number
  readonly chunks: readonly { readonly chunk: number; readonly chars: number; readonly tokens: number; readonly starts: string }[]
}

/** The manifest of `text` split into chunks of `size`. */
export function chunkManifest(text: string, size: number): ChunkManifest {
  return {
    chars: [...text].length,
    tokens: estimateTokens(text),
    chunks: chunkText(text, size).map((chunk) => ({
      chunk: chunk.index,
      chars: [...chunk.text].length,
      tokens: estimateTokens(chunk.text),
      starts: memoryTitle(chunk.text, 60),
    })),
  }
}
