/**
 * The baseline (src/migrations/baseline.ts) against the migrations it replaced (kept as data in
 * fixtures/legacy-migrations/): a database they brought to 0024, with rows in every table, must
 * reach the schema an empty database gets from the baseline, every row kept (the request log's
 * counts made anew from its rows).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type pg from 'pg'
import { migrate, SchemaTooOldError } from '../src/migrations/migrate.ts'
import { migrations } from '../src/migrations/migrations.ts'
import { migrations as legacyMigrations } from './fixtures/legacy-migrations/migrations.ts'
import { createTestDatabase, type TestDatabase } from './database.ts'

/** Every table, column, constraint, index, trigger and function of the schema, as comparable text (day partitions left out). */
async function catalog(pool: pg.Pool): Promise<Record<string, string[]>> {
  const lines = async (sql: string) => (await pool.query<{ line: string }>(sql)).rows.map((row) => row.line)
  const tables = `SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition`
  return {
    tables: await lines(`SELECT c.relname || ' ' || c.relkind::text || ' ' || coalesce(array_to_string(c.reloptions, ','), '') AS line
                           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`),
    columns: await lines(`SELECT concat_ws(' ', table_name, ordinal_position, column_name, data_type, udt_name, is_nullable, column_default) AS line
                            FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN (SELECT relname FROM (${tables}) t) ORDER BY 1`),
    constraints: await lines(`SELECT t.relname || ' ' || con.conname || ' ' || pg_get_constraintdef(con.oid) AS line
                                FROM pg_constraint con JOIN (${tables}) t ON t.oid = con.conrelid ORDER BY 1`),
    indexes: await lines(`SELECT pg_get_indexdef(i.indexrelid) AS line FROM pg_index i JOIN (${tables}) t ON t.oid = i.indrelid ORDER BY 1`),
    triggers: await lines(`SELECT pg_get_triggerdef(tg.oid) AS line FROM pg_trigger tg JOIN (${tables}) t ON t.oid = tg.tgrelid WHERE NOT tg.tgisinternal ORDER BY 1`),
    // Bodies compared with their whitespace folded: the baseline writes them indented otherwise.
    functions: await lines(`SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid) || ': ' || regexp_replace(trim(p.prosrc), '\\s+', ' ', 'g') AS line
                              FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1`),
  }
}

const DAY = `FOR VALUES FROM ('2026-12-01 00:00:00+00') TO ('2026-12-02 00:00:00+00')`
const AT = `'2026-12-01T10:03:00Z'`

/** A row in every table the baseline keeps, as the old code wrote them (rollups by their triggers). */
const ROWS = `
  INSERT INTO providers (name, type) VALUES ('openai', 'openai');
  INSERT INTO keys (provider, id, name, value, models, bedrock_key_config) VALUES ('openai', 'k1', 'key one', 'env.KEY', '{gpt-4o}', '{"region": "us-east-1"}');
  INSERT INTO settings (name, value, origin) VALUES ('history_enabled', 'true', 'api');
  INSERT INTO store_meta (name, value) VALUES ('history_retention_ran_at', '0');
  INSERT INTO held_keys (id, entry) VALUES ('openai:k1', '{"rung": 1}');
  INSERT INTO held_keys_snapshots (taken_at, node_id, region, entries) VALUES (now(), 'node-1', 'eu', 1);
  INSERT INTO gateway_keys (id, name, secret_hash, redacted, origin) VALUES ('g1', 'ci', 'hash', 'sk-...1', 'api');
  CREATE TABLE history_events_p20261201 PARTITION OF history_events ${DAY};
  CREATE TABLE history_snapshots_p20261201 PARTITION OF history_snapshots ${DAY};
  CREATE TABLE history_counts_p20261201 PARTITION OF history_counts ${DAY};
  CREATE TABLE request_log_p20261201 PARTITION OF request_log ${DAY};
  CREATE TABLE request_log_counts_p20261201 PARTITION OF request_log_counts ${DAY};
  CREATE TABLE request_log_minutes_p20261201 PARTITION OF request_log_minutes ${DAY};
  INSERT INTO history_events (at, node_id, region, entity, kind) VALUES (${AT}, 'node-1', 'eu', 'key:openai:k1', 'hold:placed');
  INSERT INTO history_snapshots (at, node_id, region, entity, provider, model, key_id, state, weight, score, error_penalty, latency_penalty, utilisation, recovery, requests, errors)
    VALUES (${AT}, 'node-1', 'eu', 'route:openai:gpt-4o:k1', 'openai', 'gpt-4o', 'k1', 'degraded', 0.5, 60, 0.2, 0.1, 0.3, 0, 12, 3);
  INSERT INTO history_counts (at, node_id, region, provider, model, served, failed) VALUES (${AT}, 'node-1', 'eu', 'openai', 'gpt-4o', 9, 3);
  INSERT INTO history_episodes (node_id, id, region, entity, scope, provider, opened_at, updated_at, detail) VALUES ('node-1', 'e1', 'eu', 'key:openai:k1', 'key', 'openai', ${AT}, ${AT}, '{}');
  INSERT INTO history_nodes (node_id, region, started_at, last_seen_at) VALUES ('node-1', 'eu', ${AT}, ${AT});
  INSERT INTO request_log (at, id, node_id, region, surface, requested_model, status, latency_ms, stream, picked_by, moved_off, is_check, added_fallback_served, search, detail)
    VALUES (${AT}, '01900000-0000-7000-8000-000000000001', 'node-1', 'eu', 'chat_completions', 'gpt-4o', 200, 12.5, false, 'routing', false, false, false, '', '[1]');
  INSERT INTO request_log_combinations (id, node_id, model, status, picked_by, moved_off, is_check, added_fallback_served, key_ids, last_day) VALUES (15, 'node-1', 'gpt-4o', 200, 'routing', false, false, false, '{}', '2026-12-01');
  INSERT INTO request_log_counts (span, at, combination, requests) VALUES (60, '2026-12-01T10:03:00Z', 15, 1), (3600, '2026-12-01T10:00:00Z', 15, 1);
  INSERT INTO request_log_minutes (span, at, node_id, model, status, picked_by, moved_off, is_check, added_fallback_served, key_ids, combination, requests)
    VALUES (60, ${AT}, 'node-1', 'gpt-4o', 200, 'routing', false, false, false, '{}', 'a combination', 1);
`

/** Every row of every table the baseline keeps, as JSON text per table (partitions read through their parents). */
async function contents(pool: pg.Pool): Promise<Record<string, string[]>> {
  const { rows: tables } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'schema_migrations' ORDER BY 1`,
  )
  const all: Record<string, string[]> = {}
  for (const { name } of tables) all[name] = (await pool.query<{ row: string }>(`SELECT row_to_json(t)::text AS row FROM ${name} t ORDER BY 1`)).rows.map((row) => row.row)
  return all
}

/** The request log's counts per facet value of one span, summed over its times (zeros left out), as facet -> value -> requests. */
async function facetCounts(pool: pg.Pool, span: number): Promise<Record<string, Record<string, number>>> {
  const { rows } = await pool.query<{ facet: string; value: string; requests: string }>(
    'SELECT facet, value, sum(requests) AS requests FROM request_log_facet_counts WHERE span = $1 GROUP BY 1, 2 HAVING sum(requests) <> 0 ORDER BY 1, 2',
    [span],
  )
  const facets: Record<string, Record<string, number>> = {}
  for (const row of rows) (facets[row.facet] ??= {})[row.value] = Number(row.requests)
  return facets
}

describe('the baseline migration', () => {
  let upgraded: TestDatabase
  let fresh: TestDatabase
  let partial: TestDatabase
  let today: TestDatabase
  beforeAll(async () => {
    ;[upgraded, fresh, partial, today] = await Promise.all([createTestDatabase(), createTestDatabase(), createTestDatabase(), createTestDatabase()])
  })
  afterAll(async () => {
    await Promise.all([upgraded.drop(), fresh.drop(), partial.drop(), today.drop()])
  })

  it('brings a database the old migrations left at 0024 to the schema an empty one gets, every row kept', async () => {
    expect((await migrate(upgraded.pool, legacyMigrations)).applied.at(-1)).toBe('0024')
    await upgraded.pool.query(ROWS)
    const before = await contents(upgraded.pool)
    expect(before.history_snapshot_rollups).toHaveLength(3)
    expect(before.history_count_rollups).toHaveLength(3)

    expect(await migrate(upgraded.pool)).toEqual({ applied: ['0026', '0027'] })
    expect(await migrate(fresh.pool)).toEqual({ applied: ['0026', '0027'] })
    expect(await catalog(upgraded.pool)).toEqual(await catalog(fresh.pool))

    // 0022's tables are gone, their partitions with them; 0023's counts are made anew (below); every other row is as it was.
    const gone = ['request_log_minutes', 'request_log_minutes_since', 'request_log_counts_since']
    for (const table of gone) expect(before[table]).toHaveLength(1)
    const without = (all: Record<string, string[]>, names: string[]) => Object.fromEntries(Object.entries(all).filter(([name]) => !names.includes(name)))
    const remade = ['request_log_counts', 'request_log_combinations', 'request_log_facet_counts']
    expect(without(await contents(upgraded.pool), remade)).toEqual(without(before, [...gone, ...remade]))
    const { rows: partitions } = await upgraded.pool.query("SELECT relname FROM pg_class WHERE relname LIKE 'request_log_minutes%'")
    expect(partitions).toEqual([])

    // Both record the baseline and what came after it, and migrate nothing more.
    for (const database of [upgraded, fresh]) {
      const { rows } = await database.pool.query<{ version: string; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')
      expect(rows).toEqual([{ version: '0026', name: 'baseline' }, { version: '0027', name: 'request log facet counts' }])
      expect(await migrate(database.pool)).toEqual({ applied: [] })
    }
    // The log's counts are its rows', the one logged before included, kept by its triggers from then on.
    const counts = async () => (await upgraded.pool.query<{ span: number; requests: string }>('SELECT span, requests FROM request_log_counts WHERE requests <> 0 ORDER BY span')).rows
    expect(await counts()).toEqual([{ span: 60, requests: '1' }, { span: 3600, requests: '1' }])
    expect(await facetCounts(upgraded.pool, 60)).toEqual({ models: { 'gpt-4o': 1 }, status: { '200': 1 }, failure_classes: { none: 1 }, nodes: { 'node-1': 1 }, picked_by: { routing: 1 }, moved_off: { false: 1 }, check: { false: 1 }, added_fallback: { false: 1 } })
    expect(await facetCounts(upgraded.pool, 3600)).toEqual(await facetCounts(upgraded.pool, 60))
    await upgraded.pool.query('DELETE FROM request_log')
    expect(await counts()).toEqual([])
    expect(await facetCounts(upgraded.pool, 60)).toEqual({})
  })

  it('brings a database at the baseline (0026) with rows to 0027: the rows already logged counted per facet value, and those logged after', async () => {
    await migrate(today.pool, migrations.filter((migration) => migration.version <= '0026'))
    const row = (id: string, provider: string | null, served: string | null, keys: string | null) => `
      INSERT INTO request_log (at, id, node_id, region, surface, requested_model, served_provider, served_key_id, key_ids, status, latency_ms, stream, picked_by, moved_off, is_check, added_fallback_served, search)
        VALUES (${AT}, '01900000-0000-7000-8000-00000000000${id}', 'node-1', 'eu', 'chat_completions', 'gpt-4o', ${provider}, ${served}, ${keys}, 200, 1, false, 'routing', false, false, false, '')`
    await today.pool.query(`CREATE TABLE request_log_p20261201 PARTITION OF request_log ${DAY}; CREATE TABLE request_log_counts_p20261201 PARTITION OF request_log_counts ${DAY};`)
    // Served by k2 after trying k1; failed on no key at all.
    await today.pool.query(row('1', "'openai'", "'k2'", "'{k1,k2}'") + ';' + row('2', 'NULL', 'NULL', 'NULL'))
    expect(await migrate(today.pool)).toEqual({ applied: ['0027'] })
    const expected = { providers: { openai: 1 }, models: { 'gpt-4o': 2 }, status: { '200': 2 }, failure_classes: { none: 2 }, key_ids: { k1: 1, k2: 1 }, nodes: { 'node-1': 2 }, picked_by: { routing: 2 }, moved_off: { false: 2 }, check: { false: 2 }, added_fallback: { false: 2 } }
    expect(await facetCounts(today.pool, 60)).toEqual(expected)
    await today.pool.query(row('3', "'openai'", "'k1'", 'NULL'))
    expect(await facetCounts(today.pool, 3600)).toMatchObject({ providers: { openai: 2 }, key_ids: { k1: 2, k2: 1 }, status: { '200': 3 } })
  })

  it('refuses a database the old migrations left short of 0024, changing nothing', async () => {
    await migrate(partial.pool, legacyMigrations.filter((migration) => migration.version <= '0021'))
    const error = await migrate(partial.pool).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(SchemaTooOldError)
    expect(error).toMatchObject({ code: 'schema_too_old', latest: '0021' })
    const { rows } = await partial.pool.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version')
    expect(rows.at(-1)).toEqual({ version: '0021' })
  })
})
