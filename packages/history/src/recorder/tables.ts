/** How each history row maps onto its table's columns (the baseline migration, packages/store); episodes are upserted, one row per node and episode rewritten as it changes. */
import type pg from 'pg'
import { unnestOf, type Column } from '../writer/insert.ts'
import type { CountRow, Episode, HistoryEvent, SnapshotRow, Stamped } from '../tracker/types.ts'

const at = <Row extends { at: number }>(): Column<Row> => ({ name: 'at', type: 'timestamptz', value: (row) => new Date(row.at) })
/** Columns of one type, each named as its table names it and read from the row's field beside it. */
const fields = <Row>(type: string, names: Record<string, keyof Row>): Column<Row>[] => Object.entries(names).map(([name, field]) => ({ name, type, value: (row) => row[field] }))
const node = <Row extends { nodeId: string; region: string }>(): Column<Row>[] => fields<Row>('text', { node_id: 'nodeId', region: 'region' })
/** What every partitioned table's rows start with: the time, the node, then text columns. */
const head = <Row extends Stamped<{ at: number }>>(texts: Record<string, keyof Row>): Column<Row>[] => [at<Row>(), ...node<Row>(), ...fields<Row>('text', texts)]

/** Tables partitioned by day. */
export const PARTITIONED_TABLES = ['history_events', 'history_snapshots', 'history_counts'] as const

type Event = Stamped<HistoryEvent>
export const eventColumns: Column<Event>[] = [
  ...head<Event>({ entity: 'entity', kind: 'kind', provider: 'provider', model: 'model', key_id: 'keyId' }),
  { name: 'detail', type: 'jsonb', value: (row) => row.detail },
]

type Snapshot = Stamped<SnapshotRow>
export const snapshotColumns: Column<Snapshot>[] = [
  ...head<Snapshot>({ entity: 'entity', provider: 'provider', model: 'model', key_id: 'keyId', state: 'state' }),
  { name: 'held', type: 'boolean', value: (row) => row.held },
  ...fields<Snapshot>('float8', { weight: 'weight', score: 'score', error_penalty: 'errorPenalty', latency_penalty: 'latencyPenalty', utilisation: 'utilisation', recovery: 'recovery', latency_ms: 'latencyMs' }),
  ...fields<Snapshot>('int4', { requests: 'requests', errors: 'errors' }),
]

type Count = Stamped<CountRow>
export const countColumns: Column<Count>[] = [
  ...head<Count>({ provider: 'provider', model: 'model' }),
  ...fields<Count>('int4', {
    served: 'served', failed: 'failed', redirected: 'redirected', fallback_served: 'fallbackServed',
    routing_picked: 'routingPicked', caller_named: 'callerNamed', kept_failing: 'keptFailing', checks: 'checks',
  }),
]

/** The episode fields kept in `detail` (everything but the indexed columns). */
const episodeDetail = ({ id, entity, scope, provider, models, keyIds, openedAt, closedAt, updatedAt, ...detail }: Episode) => detail

const episodeColumns: Column<Stamped<Episode>>[] = [
  ...node<Stamped<Episode>>(),
  ...fields<Stamped<Episode>>('text', { id: 'id', entity: 'entity', scope: 'scope', provider: 'provider' }),
  // text[] columns cannot go through unnest of a 2-D array: they travel as JSON and are cast back.
  { name: 'models', type: 'jsonb', value: (row) => row.models },
  { name: 'key_ids', type: 'jsonb', value: (row) => row.keyIds },
  { name: 'opened_at', type: 'timestamptz', value: (row) => new Date(row.openedAt) },
  { name: 'closed_at', type: 'timestamptz', value: (row) => (row.closedAt === null ? null : new Date(row.closedAt)) },
  { name: 'updated_at', type: 'timestamptz', value: (row) => new Date(row.updatedAt) },
  { name: 'detail', type: 'jsonb', value: (row) => episodeDetail(row) },
]

/** Upserts a batch of episodes in one statement; the latest copy of each wins. */
export async function upsertEpisodes(pool: pg.Pool, rows: readonly Stamped<Episode>[]): Promise<void> {
  const latest = new Map<string, Stamped<Episode>>()
  for (const row of rows) {
    const key = `${row.nodeId}\u0000${row.id}`
    const seen = latest.get(key)
    if (seen === undefined || seen.updatedAt <= row.updatedAt) latest.set(key, row)
  }
  const { names, unnest, values } = unnestOf(episodeColumns, [...latest.values()])
  await pool.query(
    `INSERT INTO history_episodes (node_id, region, id, entity, scope, provider, models, key_ids, opened_at, closed_at, updated_at, detail)
     SELECT node_id, region, id, entity, scope, provider,
            ARRAY(SELECT jsonb_array_elements_text(models)), ARRAY(SELECT jsonb_array_elements_text(key_ids)),
            opened_at, closed_at, updated_at, detail
       FROM unnest(${unnest}) AS input(${names.join(', ')})
     ON CONFLICT (node_id, id) DO UPDATE SET
       models = EXCLUDED.models, key_ids = EXCLUDED.key_ids, closed_at = EXCLUDED.closed_at,
       updated_at = EXCLUDED.updated_at, detail = EXCLUDED.detail
     WHERE history_episodes.updated_at <= EXCLUDED.updated_at`,
    values,
  )
}
