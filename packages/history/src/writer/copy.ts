/**
 * `COPY ... FROM STDIN` on a pooled connection: the cheapest way into Postgres for rows written
 * at request rate (bench/README.md, "The request log on and off"). The rows arrive encoded, as
 * one buffer sent as one CopyData message.
 *
 * pg runs it as a "submittable" (the interface pg's own Query implements): `submit` sends the
 * statement, the data and CopyDone in one write, not waiting for CopyInResponse (one system call
 * and no round trip per batch). The server drops the data after a refused statement (protocol
 * docs, "COPY Operations"). ReadyForQuery settles it; an error settles it once.
 */
import type pg from 'pg'

/** The part of pg's connection a submittable talks to (not in @types/pg). */
interface CopyConnection {
  /** The socket pg writes its messages to. */
  stream: { writable: boolean; write(chunk: Buffer): boolean; cork(): void; uncork(): void }
  query(text: string): void
}

/** One COPY FROM STDIN, as pg's client runs it. */
class CopyIn {
  /** Set by pg's `client.query(submittable, callback)`. */
  callback?: (error: Error | null) => void
  private settled = false
  private error: Error | null = null

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
  ) {}

  /**
   * The rows come with room for CopyData's header in front: filled in and written as they are,
   * sparing pg's serializer a copy of the whole batch. A socket no longer writable is left alone,
   * as pg's own writes do; its error settles the statement.
   */
  submit(connection: CopyConnection): void {
    this.data[0] = COPY_DATA
    this.data.writeInt32BE(this.data.length - 1, 1)
    const stream = connection.stream
    stream.cork()
    connection.query(this.text)
    if (stream.writable) {
      stream.write(this.data)
      stream.write(COPY_DONE)
    }
    stream.uncork()
  }

  handleCopyInResponse(): void {}

  handleCommandComplete(): void {}

  handleEmptyQuery(): void {}

  /** A server error is followed by ReadyForQuery; a lost connection is not: settle now, once. */
  handleError(error: Error): void {
    this.error = error
    this.settle()
  }

  handleReadyForQuery(): void {
    this.settle()
  }

  private settle(): void {
    if (this.settled) return
    this.settled = true
    this.callback?.(this.error)
  }
}

/** CopyData's message type ('d') and the bytes its header takes: the type and an int32 length. */
const COPY_DATA = 0x64
/** CopyDone: its type ('c') and its length, 4 (itself). */
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4])
export const COPY_HEADER_BYTES = 5

/**
 * Copies `data` (a COPY stream after `COPY_HEADER_BYTES` bytes of room for the message header:
 * text-format rows, or with `binary` a whole binary-format stream, header and trailer included)
 * into `table`'s `columns` in one statement on one pooled connection; `binary` for COPY's binary format.
 */
export async function copyRows(pool: pg.Pool, table: string, columns: readonly string[], data: Buffer, { binary = false } = {}): Promise<void> {
  if (data.length <= COPY_HEADER_BYTES) return
  const statement = `COPY ${table} (${columns.map((name) => `"${name}"`).join(', ')}) FROM STDIN${binary ? ' WITH (FORMAT binary)' : ''}`
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    await new Promise<void>((resolve, reject) => {
      // pg's typings know only its own Query; a submittable is what pg-cursor and COPY use.
      ;(client as unknown as { query(submittable: CopyIn, callback: (error: Error | null) => void): void }).query(new CopyIn(statement, data), (error) => (error ? reject(error) : resolve()))
    })
  } catch (error) {
    // A connection that lost its server is not put back; a refused row leaves it usable.
    if (!(error instanceof Error && 'severity' in error)) broken = error instanceof Error ? error : new Error(String(error))
    throw error
  } finally {
    client.release(broken)
  }
}
