export { DshHome, HostError, HOST_DIR, PLAYGROUND_DIR, REPO_ROOT, TEST_OVERLAY, dshEntry, hostPath, packWorkspaces } from './host.js'
export type { DshRunOptions, DshRunResult } from './host.js'
export { contentText, defaultResponder, isHostContext, lastUserText, requestText, startModelServer } from './model-server.js'
export type {
  ChatRequestBody,
  LoggedRequest,
  ModelServer,
  ModelServerOptions,
  RequestPurpose,
  Responder,
  ScriptedReply,
  ScriptedToolCall,
  Usage,
} from './model-server.js'
export { decodeSessionLog, loggedUserMessages } from './session-log.js'
export type { LoggedUserMessage } from './session-log.js'
