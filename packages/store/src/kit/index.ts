/**
 * `@dsh-memory/store/kit`: the small pure helpers every dsh-memory package shares (host
 * message text, clipping, CJK detection, code fences, coded errors, background work, busy
 * retry, tool input schemas, renamed events). No DSH import and no database: any package,
 * core or adapter, may use it.
 *
 * @module @dsh-memory/store/kit
 */
export { BackgroundWork } from './background.ts'
export { emitRenamed, onRenamed } from './events.ts'
export type { EventAliases, EventEmitterLike, EventListenerLike } from './events.ts'
export { CodedError, codedErrorClass, describeError, isCodedError } from './errors.ts'
export type { CodedErrorClass, CodedErrorOptions, ErrorCodeStyle } from './errors.ts'
export { busyBackoffMs, retryWhileBusy } from './retry.ts'
export type { BusyRetryOptions } from './retry.ts'
export { CJK_CLASS, clip, CLIP_MARKER, containsCjk, countCjk, findCodeFences, messageText, replaceCodeFences } from './text.ts'
export type { CodeFence, ContentBlockLike } from './text.ts'
export { parseToolInput, toolOutput, toolParameters } from './tool.ts'
export type { JsonSchema, ToolInputResult } from './tool.ts'
export { findUnknownOption, optionKeysOf, strictOptionsSchema } from './options.ts'
export type { OptionKeyIssue, OptionKeys } from './options.ts'
export type { SessionEventLike, SessionLike } from './host.ts'
