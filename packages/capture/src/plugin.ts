import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import type {} from '@dsh-memory/store/plugin'
import { emitRenamed } from '@dsh-memory/store/kit'
import { claimPluginRow, stageLog } from '@dsh-memory/store/plugin'
import { resolveCaptureOptions, type CaptureOptions } from './core/options.js'
import { CaptureRecorder } from './core/recorder.js'
import { CAPTURE_EVENT_ALIASES, CAPTURE_EVENTS } from './events.js'
import { applyCaptureSettings } from './settings.js'

export { CAPTURE_EVENTS } from './events.js'
export type { CapturedMessage } from './core/recorder.js'

/** Plugin id, as the bundle row names it. */
export const name = 'memory-capture'

/** Services this plugin needs before it starts. */
export const inject = ['memoryStore'] as const

/** Config of the capture row (the reference's `capture` block). */
export interface Config extends CaptureOptions {}

export const Config: z<Config> = z.object({
  enabled: z.boolean().default(true).description('Record conversations into the memory store (L0).'),
  stripCodeBlocks: z
    .boolean()
    .default(true)
    .description('Replace fenced code blocks in assistant replies with a one-line placeholder.'),
  maxMessageChars: z
    .natural()
    .default(4000)
    .description('Longest stored message in characters; longer text is cut with a marker. 0 = unlimited.'),
})

/**
 * Wire the pure recorder to the host: every `session/event` goes through it; a committed
 * row is announced as `memory-capture/captured`. Nothing here throws into the host.
 */
export function apply(ctx: Context, config: Config): void {
  // Installed twice (the preset plus this bundle)? Only the first row runs; see claimPluginRow.
  if (!claimPluginRow(ctx, name)) return
  const options = resolveCaptureOptions(config)
  const logger = ctx.logger('memory-capture')
  const log = stageLog(ctx)
  const recorder = new CaptureRecorder(ctx.memoryStore, options, {
    workspaceOf: (cwd) => ctx.memoryStore.workspaceOf(cwd),
    onCaptured: (message) => {
      log('capture', 'stored', { session: message.conversationId, role: message.role, turn: message.turn, truncated: message.truncated })
      try {
        emitRenamed(ctx, CAPTURE_EVENT_ALIASES, CAPTURE_EVENTS.captured, message)
      } catch (error) {
        logger.warn('a memory-capture/captured listener failed: %s', error instanceof Error ? error.message : String(error))
      }
    },
    onError: (error, where) => {
      log('capture', 'failed', { session: where.sessionId, event: where.eventType, seq: where.seq, code: (error as { code?: string } | null)?.code ?? 'error' })
      logger.warn(
        'could not store %s #%d of session %s: %s',
        where.eventType,
        where.seq,
        where.sessionId,
        error instanceof Error ? error.message : String(error),
      )
    },
  })
  // Every field is a live setting (namespace memory-capture): the recorder reads it per event.
  applyCaptureSettings(ctx, Config, config, recorder, (message) => logger.warn(message))
  ctx.on('session/event', (session, event) => {
    // Fire and forget: the recorder queues writes in event order and never rejects.
    void recorder.handle(session, event)
  })
  // The host awaits session/flush before it exits (headless) or checkpoints: drain our queue
  // so the last assistant reply is committed before the database closes.
  ctx.on('session/flush', () => recorder.whenIdle())
  ctx.on('agent/disposed', (payload) => {
    const id = payload?.agent?.id
    if (typeof id === 'string') recorder.forget(id)
  })
}
