/**
 * Progress reporting: a bar (cli-progress) when stderr is a terminal, one plain line per
 * phase and per tenth of the work otherwise (CI logs, pipes).
 */
import cliProgress from 'cli-progress'
import type { BenchProgress } from './bench/locomo.ts'
import type { CliIO } from './io.ts'

/** A progress reporter on `io.stderr`; silent when `quiet`. */
export function createProgress(io: CliIO, quiet = false): BenchProgress {
  if (quiet) return { start() {}, tick() {}, stop() {} }
  if (io.stderr.isTTY) {
    let bar: cliProgress.SingleBar | undefined
    return {
      start(phase, total) {
        bar = new cliProgress.SingleBar(
          { format: `${phase.padEnd(20)} [{bar}] {value}/{total} {detail}`, stream: io.stderr as NodeJS.WritableStream, hideCursor: true, clearOnComplete: false },
          cliProgress.Presets.shades_classic,
        )
        bar.start(total, 0, { detail: '' })
      },
      tick(detail) {
        bar?.increment(1, { detail: detail ?? '' })
      },
      stop() {
        bar?.stop()
        bar = undefined
      },
    }
  }
  let phase = ''
  let total = 0
  let done = 0
  let nextReport = 0
  return {
    start(name, count) {
      phase = name
      total = count
      done = 0
      nextReport = Math.max(1, Math.ceil(count / 10))
      io.stderr.write(`${phase}: 0/${total}\n`)
    },
    tick(detail) {
      done++
      if (done >= nextReport || done === total) {
        io.stderr.write(`${phase}: ${done}/${total}${detail ? ` (${detail})` : ''}\n`)
        nextReport = done + Math.max(1, Math.ceil(total / 10))
      }
    },
    stop() {},
  }
}
