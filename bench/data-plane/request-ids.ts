/**
 * Micro-benchmark of the request id every inference request gets (UUIDv7, issue 15's
 * `x-request-id`): the gateway's `newRequestId` beside the way it was made before stop 14
 * (randomUUID's random tail behind the time, by string slices), kept here as the comparison.
 * Ids are made five per millisecond, as at ~5,000 requests per second.
 *
 * Run from the repository root:  node --import tsx bench/data-plane/request-ids.ts
 *
 * Batches of BATCH ids timed with process.hrtime.bigint, the two ways taking turns batch by
 * batch; the figures are the median and p99 of the per-batch averages (per id), after a warm-up.
 */
import { randomUUID } from 'node:crypto'
import { newRequestId } from '../../packages/history/src/request-log/id.ts'

const BATCH = 1_000
const BATCHES = 1_000
const WARMUP_BATCHES = 200

/** The id as it was made before stop 14. */
function slicedId(now: number): string {
  const random = randomUUID()
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`
}

const ways: [string, (now: number) => string][] = [
  ['randomUUID and slices (before)', slicedId],
  ['newRequestId (bulk random bytes, written as bytes)', newRequestId],
]
const perId = ways.map(() => [] as number[])
let clock = 1_796_000_000_000
// what the ids are used for, so none is optimized away; charCodeAt flattens a string made of parts, as a header write would
let sink = 0
for (let batch = 0; batch < WARMUP_BATCHES + BATCHES; batch++) {
  ways.forEach(([, make], way) => {
    const started = process.hrtime.bigint()
    for (let index = 0; index < BATCH; index++) sink += make(clock + Math.floor(index / 5)).charCodeAt(35)
    const elapsed = Number(process.hrtime.bigint() - started) / BATCH / 1_000
    if (batch >= WARMUP_BATCHES) (perId[way] as number[]).push(elapsed)
  })
  clock += BATCH / 5
}
console.log('| request id | median (us) | p99 (us) |')
console.log('| --- | ---: | ---: |')
ways.forEach(([label], way) => {
  const sorted = (perId[way] as number[]).sort((a, b) => a - b)
  console.log(`| ${label} | ${sorted[Math.floor(sorted.length / 2)]!.toFixed(3)} | ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(3)} |`)
})
if (sink === 0) console.log('(no ids)')
