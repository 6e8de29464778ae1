/**
 * A minimal OTLP/HTTP trace receiver for benches (issue 40): answers every POST to /v1/traces
 * with 200 and counts what it took in, so a gateway with tracing on exports for real without a
 * collector. Prints its URL, then on SIGINT/SIGTERM the batches, bytes and spans it received.
 *
 *   node bench/data-plane/otlp-sink.mjs [--port 4318]
 */
import { createServer } from 'node:http'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } })
let batches = 0
let bytes = 0
let spans = 0
const server = createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    const body = Buffer.concat(chunks)
    batches++
    bytes += body.length
    // Every span has a "kind"; its events and links do not.
    spans += (body.toString('utf8').match(/"kind":/g) ?? []).length
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end('{}')
  })
})
server.listen(Number(values.port), '127.0.0.1', () => console.log(`otlp sink listening on http://127.0.0.1:${server.address().port}`))
const stop = () => {
  console.log(`otlp sink: ${batches} batches, ${bytes} bytes, about ${spans} spans`)
  server.close(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
