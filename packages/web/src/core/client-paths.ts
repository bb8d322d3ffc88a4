/**
 * Paths shared by the browser half (bundled into `./client`) and the host routes. A file of
 * its own so the browser bundle imports no Node module.
 */

/** Where the browser half's routes are mounted on the host's web server: fixed, so the browser half finds them whatever the memory browser's `path`. */
export const CLIENT_API_BASE = '/dsh-memory'

/** Settings namespaces a card may write through those routes (ours only). */
export const CLIENT_SETTINGS_NAMESPACES = ['memory-recall', 'memory-distill', 'memory-palace', 'memory-tree', 'memory-cue-bank', 'memory-capture'] as const
