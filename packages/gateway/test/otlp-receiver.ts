/**
 * A real OTLP/HTTP trace receiver for tests: a node:http server that takes what a node's
 * exporter POSTs to /v1/traces (protobuf, `application/x-protobuf`, or JSON,
 * `application/json`), keeps every body as received, and decodes the spans into plain objects
 * to assert on. The protobuf is read by a wire-format reader of its own (the OTLP field numbers
 * from opentelemetry-proto), into the OTLP JSON shape, so both encodings meet one decoder.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One span as received, with its attributes decoded. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP's numbers: 2 SERVER, 3 CLIENT. */
  kind: number
  attributes: Record<string, unknown>
  events: { name: string; attributes: Record<string, unknown> }[]
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[]
  status: { code?: number }
  resource: Record<string, unknown>
}

export interface OtlpReceiver {
  /** The endpoint to set as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string
  /** Every request body received, as text (to search for secrets: protobuf keeps strings as UTF-8 bytes). */
  bodies: string[]
  /** The content type of each body. */
  types: string[]
  spans(): ReceivedSpan[]
  stop(): Promise<void>
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: OtlpValue[] } }
type OtlpAttribute = { key: string; value: OtlpValue }
/** The OTLP JSON shape: resourceSpans[].scopeSpans[].spans[] (ids in hex, per the OTLP JSON encoding). */
type OtlpDocument = { resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, any>[] }[] }[] }

/** A protobuf message's fields in order: number, wire type, and the value (a number, or the bytes of a length-delimited field). */
function fields(bytes: Uint8Array): { field: number; value: number | bigint | Uint8Array }[] {
  const out: { field: number; value: number | bigint | Uint8Array }[] = []
  let pos = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      const byte = bytes[pos++]
      if (byte === undefined) throw new Error('protobuf: truncated varint')
      result |= BigInt(byte & 0x7f) << shift
      if (byte < 0x80) return result
      shift += 7n
    }
  }
  while (pos < bytes.length) {
    const key = Number(varint())
    const field = key >>> 3
    const wire = key & 7
    if (wire === 0) out.push({ field, value: varint() })
    else if (wire === 1) { out.push({ field, value: Buffer.from(bytes.subarray(pos, pos + 8)).readBigUInt64LE() }); pos += 8 }
    else if (wire === 5) { out.push({ field, value: Buffer.from(bytes.subarray(pos, pos + 4)).readUInt32LE() }); pos += 4 }
    else if (wire === 2) {
      const length = Number(varint())
      if (pos + length > bytes.length) throw new Error('protobuf: a field runs past its message')
      out.push({ field, value: bytes.subarray(pos, pos + length) })
      pos += length
    } else throw new Error(`protobuf: wire type ${wire}`)
  }
  return out
}
const text = (value: unknown) => Buffer.from(value as Uint8Array).toString('utf8')
const hex = (value: unknown) => Buffer.from(value as Uint8Array).toString('hex')
const each = (bytes: Uint8Array, field: number) => fields(bytes).filter((entry) => entry.field === field).map((entry) => entry.value as Uint8Array)
const scalar = (bytes: Uint8Array, field: number) => fields(bytes).find((entry) => entry.field === field)?.value

/** AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue: values 1). */
function anyValue(bytes: Uint8Array): OtlpValue {
  const [entry] = fields(bytes)
  if (entry === undefined) return {}
  if (entry.field === 1) return { stringValue: text(entry.value) }
  if (entry.field === 2) return { boolValue: entry.value === 1n }
  if (entry.field === 3) return { intValue: String(BigInt.asIntN(64, entry.value as bigint)) }
  if (entry.field === 4) return { doubleValue: Buffer.from(new BigUint64Array([entry.value as bigint]).buffer).readDoubleLE() }
  if (entry.field === 5) return { arrayValue: { values: each(entry.value as Uint8Array, 1).map(anyValue) } }
  return {}
}

/** KeyValue: key 1, value 2. */
const attributesIn = (bytes: Uint8Array, field: number): OtlpAttribute[] =>
  each(bytes, field).map((pair) => ({ key: text(scalar(pair, 1)), value: anyValue((scalar(pair, 2) as Uint8Array | undefined) ?? new Uint8Array()) }))

/** ExportTraceServiceRequest (resource_spans 1) -> ResourceSpans (resource 1, scope_spans 2) -> ScopeSpans (spans 2) -> Span. */
function decodeRequest(body: Uint8Array): OtlpDocument {
  return {
    resourceSpans: each(body, 1).map((resourceSpans) => ({
      resource: { attributes: attributesIn((scalar(resourceSpans, 1) as Uint8Array | undefined) ?? new Uint8Array(), 1) },
      scopeSpans: each(resourceSpans, 2).map((scopeSpans) => ({
        spans: each(scopeSpans, 2).map((span) => {
          const parent = scalar(span, 4)
          const status = scalar(span, 15) as Uint8Array | undefined
          return {
            traceId: hex(scalar(span, 1)),
            spanId: hex(scalar(span, 2)),
            ...(parent !== undefined ? { parentSpanId: hex(parent) } : {}),
            name: text(scalar(span, 5)),
            kind: Number(scalar(span, 6) ?? 0),
            attributes: attributesIn(span, 9),
            // Event: name 2, attributes 3. Link: trace_id 1, span_id 2, attributes 4. Status: code 3.
            events: each(span, 11).map((event) => ({ name: text(scalar(event, 2)), attributes: attributesIn(event, 3) })),
            links: each(span, 13).map((link) => ({ traceId: hex(scalar(link, 1)), spanId: hex(scalar(link, 2)), attributes: attributesIn(link, 4) })),
            status: status === undefined ? {} : { code: Number(scalar(status, 3) ?? 0) },
          }
        }),
      })),
    })),
  }
}

function decode(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.boolValue !== undefined) return value.boolValue
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(decode)
  return null
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list ?? []) out[key] = decode(value)
  return out
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = []
  const types: string[] = []
  const documents: OtlpDocument[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = Buffer.concat(chunks)
      const type = request.headers['content-type'] ?? ''
      const protobuf = type.startsWith('application/x-protobuf')
      if (request.method === 'POST' && request.url === '/v1/traces') {
        bodies.push(body.toString('utf8'))
        types.push(type)
        documents.push(protobuf ? decodeRequest(body) : (JSON.parse(body.toString('utf8')) as OtlpDocument))
      }
      // An empty ExportTraceServiceResponse: no bytes in protobuf, {} in JSON.
      response.writeHead(200, { 'content-type': protobuf ? 'application/x-protobuf' : 'application/json' })
      response.end(protobuf ? '' : '{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    types,
    spans() {
      const spans: ReceivedSpan[] = []
      for (const parsed of documents) {
        for (const resourceSpans of parsed.resourceSpans ?? []) {
          const resource = attributesOf(resourceSpans.resource?.attributes)
          for (const scope of resourceSpans.scopeSpans ?? []) {
            // OTLP JSON as received: its fields are read one by one below and checked by the assertions.
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                events: (span.events ?? []).map((event: { name: string; attributes?: OtlpAttribute[] }) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
                links: (span.links ?? []).map((link: { traceId: string; spanId: string; attributes?: OtlpAttribute[] }) => ({ traceId: link.traceId, spanId: link.spanId, attributes: attributesOf(link.attributes) })),
                status: span.status ?? {},
                resource,
              })
            }
          }
        }
      }
      return spans
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
