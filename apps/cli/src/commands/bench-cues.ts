/** `dsh-memory bench cues` (src/bench/cues.ts): the cue bank's matcher against MiniSearch. */
import type { Command } from 'commander'
import { formatCueReport, runCueBench } from '../bench/cues.ts'
import type { CliIO } from '../io.ts'
import { parseCount } from './records.ts'

/** Register `bench cues` on the `bench` command. */
export function registerCueBench(bench: Command, io: CliIO): void {
  bench
    .command('cues')
    .description("Cue matching on a labelled set (Chinese/Japanese idioms, paraphrases, mixed text, typos, negatives) in a partition filled to the cap: the cue bank's keyword matcher against a MiniSearch index (hit@1, hit@k, false wakes, time per match).")
    .option('--runs <n>', 'runs, each with other seeded distractor cues', '5')
    .option('--cap <n>', "cues in the partition (the cue bank's maxTopics)", '200')
    .option('--json', 'print the per-run reports as one JSON array and nothing else on stdout')
    .action((options: { runs: string; cap: string; json?: boolean }) => {
      const reports = runCueBench({ runs: parseCount('--runs', options.runs, 100), cap: parseCount('--cap', options.cap, 100_000) })
      io.stdout.write(options.json ? `${JSON.stringify(reports)}\n` : `${formatCueReport(reports)}\n`)
    })
}
