/**
 * Prometheus metrics at /metrics (prom-client). One registry per node, so tests can run
 * several nodes in one process without their counters mixing.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Aggregator } from 'prom-client'
import { HotCounter, HotHistogram } from './hot-metrics.ts'

/** The node's metrics. Label values are provider, model, class and reason names: never key values. */
export type Metrics = ReturnType<typeof createMetrics>

/**
 * How often the event-loop lag histogram samples (ms): prom-client's 10 ms cost an idle node
 * about 1 % of a core (issue 19); 100 ms still catches every stall of 100 ms or more.
 */
export const EVENT_LOOP_SAMPLE_MS = 100

/** Creates the node's registry and its metrics. */
export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'switchboard_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS })
  const registers = [registry]
  return {
    registry,
    /** The /metrics text; a node with workers adds up every worker's (workers/sharing.ts). */
    render: undefined as (() => Promise<string>) | undefined,
    // Counted on every request: the light counters of hot-metrics.ts.
    requests: new HotCounter('switchboard_requests_total', 'Inference requests answered, by serving provider and HTTP status', ['provider', 'status'], registry),
    attempts: new HotCounter('switchboard_upstream_attempts_total', 'Upstream attempts, by provider and failure class ("none" on success)', ['provider', 'failure_class'], registry),
    attemptLatency: new HotHistogram('switchboard_upstream_attempt_seconds', 'Upstream attempt latency to the answer (JSON) or the first byte (stream)', ['provider'], [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registry),
    holdsPlaced: new Counter({ name: 'switchboard_holds_placed_total', help: 'Keys held after a provider refusal, by reason', labelNames: ['provider', 'reason'], registers }),
    // One state for the node: every worker of it has the same holds (workers/sharing.ts adds the rest up).
    holdsActive: new Gauge({ name: 'switchboard_holds_active', help: 'Holds in force on this node, by reason', labelNames: ['reason'], registers, aggregator: 'max' }),
    checks: new Counter({ name: 'switchboard_hold_checks_total', help: 'Checks of held keys, by outcome (served, refused_again, inconclusive, settled)', labelNames: ['provider', 'outcome'], registers }),
    heldKeySkips: new Counter({ name: 'switchboard_held_key_skips_total', help: 'Requests that skipped at least one held key', labelNames: ['provider'], registers }),
    clusterDropped: new Counter({ name: 'switchboard_cluster_messages_dropped_total', help: 'Fleet messages dropped as invalid or oversized', labelNames: ['reason'], registers }),
    gatewayKeyRequests: new HotCounter('switchboard_gateway_key_requests_total', 'Inference requests by the gateway key that sent them (its name) and HTTP status', ['gateway_key', 'status'], registry),
    connectionsEvicted: new Counter({ name: 'switchboard_http_connections_evicted_total', help: 'Idle or slow client connections closed to make room under server.max_connections', registers }),
    // The request log's own (issue 15): rows written, batch write latency (recording/request-log.ts adds rows dropped and waiting).
    requestLogWritten: new Counter({ name: 'switchboard_request_log_rows_written_total', help: 'Request log rows written to Postgres', registers }),
    requestLogWriteSeconds: new Histogram({ name: 'switchboard_request_log_write_seconds', help: 'Time to write one batch of request log rows', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5], registers }),
  }
}

/** A counter of totals kept elsewhere: zeroed at each scrape, then `read` adds them. */
export function scrapedCounter<Label extends string>(registry: Registry, name: string, help: string, labelNames: readonly Label[], read: (counter: Counter<Label>) => void): void {
  new Counter({
    name, help, labelNames, registers: [registry],
    collect() {
      this.reset()
      read(this)
    },
  })
}

/** A gauge `read` sets at each scrape (`max`: of the node's one state, so workers' values are not added up). */
export function scrapedGauge<Label extends string>(registry: Registry, name: string, help: string, labelNames: readonly Label[], read: (gauge: Gauge<Label>) => void, aggregator: Aggregator = 'sum'): void {
  new Gauge({ name, help, labelNames, registers: [registry], aggregator, collect() { read(this) } })
}
