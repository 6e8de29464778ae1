/**
 * Request ids are UUIDv7 (RFC 9562): the first 48 bits are the arrival time in ms, the rest
 * random. Ids sort by time, and `GET /api/logs/:id` finds the day partition from the id alone.
 */
import { randomUUID } from 'node:crypto'

/** A new request id for a request that arrived at `now` (epoch ms). */
export function newRequestId(now: number): string {
  // randomUUID() is v4 (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`): keep its random tail, put the time in front.
  const random = randomUUID()
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

/** True for a request id this gateway issues. */
export function isRequestId(text: string): boolean {
  return UUID_V7.test(text)
}

/** The arrival time (epoch ms) a request id carries. */
export function requestIdTime(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
}
