/** How each history row maps onto its table's columns (the baseline migration, packages/store). */
import type { Column } from '../writer/insert.ts'
import type { CountRow, Episode, HistoryEvent, SnapshotRow } from '../tracker/types.ts'

/** A row stamped with the node that recorded it. */
export type Stamped<Row> = Row & { nodeId: string; region: string }

const at = <Row extends { at: number }>(): Column<Row> => ({ name: 'at', type: 'timestamptz', value: (row) => new Date(row.at) })
const node = <Row extends { nodeId: string; region: string }>(): Column<Row>[] => [
  { name: 'node_id', type: 'text', value: (row) => row.nodeId },
  { name: 'region', type: 'text', value: (row) => row.region },
]

/** Tables partitioned by day. */
export const PARTITIONED_TABLES = ['history_events', 'history_snapshots', 'history_counts'] as const

export const eventColumns: Column<Stamped<HistoryEvent>>[] = [
  at(),
  ...node<Stamped<HistoryEvent>>(),
  { name: 'entity', type: 'text', value: (row) => row.entity },
  { name: 'kind', type: 'text', value: (row) => row.kind },
  { name: 'provider', type: 'text', value: (row) => row.provider },
  { name: 'model', type: 'text', value: (row) => row.model },
  { name: 'key_id', type: 'text', value: (row) => row.keyId },
  { name: 'detail', type: 'jsonb', value: (row) => row.detail },
]

export const snapshotColumns: Column<Stamped<SnapshotRow>>[] = [
  at(),
  ...node<Stamped<SnapshotRow>>(),
  { name: 'entity', type: 'text', value: (row) => row.entity },
  { name: 'provider', type: 'text', value: (row) => row.provider },
  { name: 'model', type: 'text', value: (row) => row.model },
  { name: 'key_id', type: 'text', value: (row) => row.keyId },
  { name: 'state', type: 'text', value: (row) => row.state },
  { name: 'held', type: 'boolean', value: (row) => row.held },
  { name: 'weight', type: 'float8', value: (row) => row.weight },
  { name: 'score', type: 'float8', value: (row) => row.score },
  { name: 'error_penalty', type: 'float8', value: (row) => row.errorPenalty },
  { name: 'latency_penalty', type: 'float8', value: (row) => row.latencyPenalty },
  { name: 'utilisation', type: 'float8', value: (row) => row.utilisation },
  { name: 'recovery', type: 'float8', value: (row) => row.recovery },
  { name: 'requests', type: 'int4', value: (row) => row.requests },
  { name: 'errors', type: 'int4', value: (row) => row.errors },
  { name: 'latency_ms', type: 'float8', value: (row) => row.latencyMs },
]

export const countColumns: Column<Stamped<CountRow>>[] = [
  at(),
  ...node<Stamped<CountRow>>(),
  { name: 'provider', type: 'text', value: (row) => row.provider },
  { name: 'model', type: 'text', value: (row) => row.model },
  { name: 'served', type: 'int4', value: (row) => row.served },
  { name: 'failed', type: 'int4', value: (row) => row.failed },
  { name: 'redirected', type: 'int4', value: (row) => row.redirected },
  { name: 'fallback_served', type: 'int4', value: (row) => row.fallbackServed },
  { name: 'routing_picked', type: 'int4', value: (row) => row.routingPicked },
  { name: 'caller_named', type: 'int4', value: (row) => row.callerNamed },
  { name: 'kept_failing', type: 'int4', value: (row) => row.keptFailing },
  { name: 'checks', type: 'int4', value: (row) => row.checks },
]

/** The episode fields kept in `detail` (everything but the indexed columns). */
export function episodeDetail(episode: Episode): Record<string, unknown> {
  const { id, entity, scope, provider, models, keyIds, openedAt, closedAt, updatedAt, ...detail } = episode
  void id, entity, scope, provider, models, keyIds, openedAt, closedAt, updatedAt
  return detail
}

export const episodeColumns: Column<Stamped<Episode>>[] = [
  ...node<Stamped<Episode>>(),
  { name: 'id', type: 'text', value: (row) => row.id },
  { name: 'entity', type: 'text', value: (row) => row.entity },
  { name: 'scope', type: 'text', value: (row) => row.scope },
  { name: 'provider', type: 'text', value: (row) => row.provider },
  // text[] columns cannot go through unnest of a 2-D array: they travel as JSON and are cast back.
  { name: 'models', type: 'jsonb', value: (row) => row.models },
  { name: 'key_ids', type: 'jsonb', value: (row) => row.keyIds },
  { name: 'opened_at', type: 'timestamptz', value: (row) => new Date(row.openedAt) },
  { name: 'closed_at', type: 'timestamptz', value: (row) => (row.closedAt === null ? null : new Date(row.closedAt)) },
  { name: 'updated_at', type: 'timestamptz', value: (row) => new Date(row.updatedAt) },
  { name: 'detail', type: 'jsonb', value: (row) => episodeDetail(row) },
]
