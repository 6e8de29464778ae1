/**
 * A real OTLP/HTTP trace receiver for tests: a node:http server that takes what a node's
 * exporter POSTs to /v1/traces (JSON, `application/json`), keeps every body as received, and
 * decodes the spans into plain objects to assert on.
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
  /** Every request body received, as text (to search for secrets). */
  bodies: string[]
  spans(): ReceivedSpan[]
  stop(): Promise<void>
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number; arrayValue?: { values?: OtlpValue[] } }
type OtlpAttribute = { key: string; value: OtlpValue }

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
  const server: Server = createServer((request, response) => {
    let text = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (text += chunk))
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') bodies.push(text)
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    spans() {
      const spans: ReceivedSpan[] = []
      for (const body of bodies) {
        // The OTLP JSON shape: resourceSpans[].scopeSpans[].spans[] (ids in hex, per the OTLP JSON encoding).
        const parsed = JSON.parse(body) as { resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, any>[] }[] }[] }
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
