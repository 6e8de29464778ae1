/**
 * The node's HTTP server from the first moment of boot (issue 37, item 5), so a probe tells
 * "starting" from "dead": until the full listener takes over, `/health` answers 503 `starting`,
 * `/health/live` 200, and anything else 503 `gateway_starting` in its caller's error shape.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { newRequestId } from '@switchboard/history'
import type { GatewayError } from '../errors.ts'
import { healthStatusCode, type HealthReport } from '../directory/health.ts'
import { anthropicErrorBody } from './surface-route.ts'
import { pathOf, routingHeaders, writeJson } from './surface.ts'

/** What `GET /health/live` answers while the process runs: for liveness probes, never 503 for a slow boot. */
export const LIVE = Object.freeze({ status: 'alive' })

/** A request listener whose handler is swapped once the node is wired. */
export interface SwitchableListener {
  listener: RequestListener
  switchTo(next: RequestListener): void
}

/** The listener of a booting node: health from `report`, everything else `starting()`'s 503. */
export function createEarlyListener(report: () => HealthReport, starting: () => GatewayError): SwitchableListener {
  let current: RequestListener = (incoming, outgoing) => answerEarly(incoming, outgoing, report, starting)
  return {
    listener: (incoming, outgoing) => current(incoming, outgoing),
    switchTo: (next) => (current = next),
  }
}

function answerEarly(incoming: IncomingMessage, outgoing: ServerResponse, report: () => HealthReport, starting: () => GatewayError): void {
  // The body is not read: drained, so the connection stays usable.
  incoming.resume()
  const path = pathOf(incoming.url)
  if (path === '/health/live') return writeJson(outgoing, 200, LIVE, {})
  if (path === '/health') {
    const health = report()
    return writeJson(outgoing, healthStatusCode(health), health, {})
  }
  const requestId = newRequestId(Date.now())
  const error = starting()
  error.extraFields = { provider: null, model: null, key_id: null, key_name: null, attempts: [], request_id: requestId }
  const headers = routingHeaders(requestId, undefined)
  headers['retry-after'] = String(error.retryAfterSeconds ?? 5)
  const body = path.startsWith('/v1/messages') ? anthropicErrorBody(error, requestId) : error.toJSON()
  writeJson(outgoing, error.status, body, headers)
}
