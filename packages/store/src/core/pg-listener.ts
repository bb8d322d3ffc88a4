/**
 * The PostgreSQL store's listener: one dedicated connection (outside the store's session, so a
 * long transaction never delays a notification) that LISTENs on {@link CHANGES_CHANNEL} and
 * tells the change feed when a commit of any process touched this store's schema.
 *
 * Payloads (sent by `pg-session.ts` at commit): `<schema>` after a write that recorded a
 * change-log row, `<schema>:<owner>` after a write to a package's tables. Other schemas'
 * notifications on the same database are ignored.
 *
 * A notification is only a hint: the feed reads the change log itself. So when the listener
 * connection drops (server restart, `pg_terminate_backend`), it reconnects with a growing delay
 * and then says `resync`: the feed catches up from its position in the log, which covers
 * every change whose notification was lost, with no gap and no duplicate.
 */
import pg from 'pg'
import { CHANGES_CHANNEL } from './change-spec.ts'
import type { ListenHandle, ListenHandlers } from './change-feed.ts'
import type { ResolvedPostgresOptions } from './options.ts'

/** First and longest wait before reconnecting a dropped listener, ms. */
const RETRY_FIRST_MS = 100
const RETRY_MAX_MS = 5_000
/** PostgreSQL truncates longer application names. */
const MAX_APPLICATION_NAME = 63

/** The application name of a store's listener connection (`pg_stat_activity`), naming its schema. */
export function listenerApplicationName(schema: string): string {
  return `dsh-memory listen ${schema}`.slice(0, MAX_APPLICATION_NAME)
}

/**
 * Connect the listener and LISTEN; on a lost connection keep reconnecting until stopped.
 * Resolves after the first attempt (listening or not: later attempts keep trying).
 */
export async function listenPg(connection: ResolvedPostgresOptions, handlers: ListenHandlers): Promise<ListenHandle> {
  const listener = new PgListener(connection, handlers)
  await listener.connect(false)
  return listener
}

class PgListener implements ListenHandle {
  readonly #connection: ResolvedPostgresOptions
  readonly #handlers: ListenHandlers
  #client: pg.Client | undefined
  #listening = false
  #stopped = false
  #retryMs = RETRY_FIRST_MS
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(connection: ResolvedPostgresOptions, handlers: ListenHandlers) {
    this.#connection = connection
    this.#handlers = handlers
  }

  get listening(): boolean {
    return this.#listening
  }

  /** One attempt; `again` (a reconnect) ends with `resync` once listening. */
  async connect(again: boolean): Promise<void> {
    const client = new pg.Client({
      connectionString: this.#connection.databaseUrl,
      application_name: listenerApplicationName(this.#connection.schema),
      connectionTimeoutMillis: Math.max(1_000, this.#connection.store.busyTimeoutMs),
    })
    this.#client = client
    // Without an error listener a dropped connection would crash the process; `end` follows it.
    client.on('error', () => {})
    client.on('end', () => this.#lost(client))
    client.on('notification', (message) => this.#notified(message))
    try {
      await client.connect()
      await client.query(`LISTEN ${CHANGES_CHANNEL}`)
    } catch {
      await client.end().catch(() => {})
      this.#lost(client)
      return
    }
    if (this.#stopped) {
      await client.end().catch(() => {})
      return
    }
    this.#listening = true
    this.#retryMs = RETRY_FIRST_MS
    if (again) this.#handlers.resync()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    this.#listening = false
    clearTimeout(this.#timer)
    const client = this.#client
    this.#client = undefined
    await client?.end().catch(() => {})
  }

  #notified(message: pg.Notification): void {
    if (message.channel !== CHANGES_CHANNEL || !message.payload) return
    const schema = this.#connection.schema
    if (message.payload === schema) this.#handlers.wake()
    else if (message.payload.startsWith(`${schema}:`)) this.#handlers.tables(message.payload.slice(schema.length + 1))
  }

  #lost(client: pg.Client): void {
    // Only the current client's loss counts (an ended old one, or a stop, does not reconnect).
    if (client !== this.#client || this.#stopped) return
    this.#client = undefined
    this.#listening = false
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => void this.connect(true), this.#retryMs)
    this.#timer.unref?.()
    this.#retryMs = Math.min(RETRY_MAX_MS, this.#retryMs * 2)
  }
}
