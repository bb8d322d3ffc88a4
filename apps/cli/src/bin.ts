#!/usr/bin/env node
/**
 * The `dsh-memory` executable (started through the committed `bin/dsh-memory.js` shim).
 */
import { handleProcessExits } from './process-exit.ts'
import { runCli } from './program.ts'

handleProcessExits()
process.exitCode = await runCli(process.argv.slice(2))
