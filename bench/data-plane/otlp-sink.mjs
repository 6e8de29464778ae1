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
/** The length-delimited fields numbered `field` of one protobuf message. */
function* fieldsOf(bytes, field) {
  let pos = 0
  const varint = () => {
    let value = 0
    for (let shift = 1; ; shift *= 128) {
      const byte = bytes[pos++]
      value += (byte & 0x7f) * shift
      if (byte < 0x80) return value
    }
  }
  while (pos < bytes.length) {
    const key = varint()
    const wire = key & 7
    if (wire === 0) varint()
    else if (wire === 1) pos += 8
    else if (wire === 5) pos += 4
    else {
      const length = varint()
      if ((key >>> 3) === field) yield bytes.subarray(pos, pos + length)
      pos += length
    }
  }
}

/** Spans in an ExportTraceServiceRequest: resource_spans (1) > scope_spans (2) > spans (2). */
function protobufSpans(body) {
  let count = 0
  for (const resource of fieldsOf(body, 1)) for (const scope of fieldsOf(resource, 2)) for (const _ of fieldsOf(scope, 2)) count++
  return count
}

const server = createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    const body = Buffer.concat(chunks)
    batches++
    bytes += body.length
    if (String(request.headers['content-type']).startsWith('application/x-protobuf')) spans += protobufSpans(body)
    // Every span has a "kind"; its events and links do not.
    else spans += (body.toString('utf8').match(/"kind":/g) ?? []).length
    // An empty ExportTraceServiceResponse in the encoding it came in.
    const protobuf = String(request.headers['content-type']).startsWith('application/x-protobuf')
    response.writeHead(200, { 'content-type': protobuf ? 'application/x-protobuf' : 'application/json' })
    response.end(protobuf ? '' : '{}')
  })
})
server.listen(Number(values.port), '127.0.0.1', () => console.log(`otlp sink listening on http://127.0.0.1:${server.address().port}`))
const stop = () => {
  console.log(`otlp sink: ${batches} batches, ${bytes} bytes, about ${spans} spans`)
  server.close(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
