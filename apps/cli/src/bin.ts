#!/usr/bin/env node
/**
 * The `dsh-memory` executable.
 */
import { runCli } from './program.ts'

process.exitCode = await runCli(process.argv.slice(2))
