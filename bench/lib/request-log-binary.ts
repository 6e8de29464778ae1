/**
 * Request-log records as one COPY stream in the binary format, for bench/recording/request-log-pg.ts: the
 * product's own encoder (packages/history/src/request-log/rows.ts `encodeRow` through a
 * BinarySink), into one Buffer per batch.
 */
import type { RequestRecord } from '../../packages/history/src/request-log/record.ts'
import { encodeRow } from '../../packages/history/src/request-log/rows.ts'
import { BINARY_COPY_HEADER, BinarySink, FULL } from '../../packages/history/src/writer/binary-sink.ts'

/** `records` as one binary COPY stream (header, tuples, trailer), after `room` bytes left for the caller. */
export function binaryBatch(records: readonly RequestRecord[], room: number): Buffer {
  const sink = new BinarySink()
  for (let size = 1 << 20; ; size *= 2) {
    const buffer = Buffer.allocUnsafe(size)
    buffer.set(BINARY_COPY_HEADER, room)
    sink.reset(buffer, room + BINARY_COPY_HEADER.length)
    try {
      for (const record of records) encodeRow(sink, record)
      sink.int16(-1)
      return buffer.subarray(0, sink.position)
    } catch (error) {
      if (error !== FULL || size > 1 << 28) throw error
    }
  }
}
