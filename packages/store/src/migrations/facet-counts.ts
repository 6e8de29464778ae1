/**
 * Migration 0027 (issue 39): the request log's counts per facet value. The facets of
 * `GET /api/logs` are each counted over the whole window with the other filters not applied,
 * so they need no combination of values: per span (60, 3600), time, facet and value, how many
 * requests. A busy day keeps about fifty of these per minute where it keeps hundreds of
 * combinations, and a day's facets sum about 4,000 of them, not 78,000 (2M rows a day).
 * The log's counting triggers (baseline.ts) keep them beside the combinations', in the same
 * statement's transaction; on a database with rows, those already logged are counted (2M rows:
 * 19 s on a loaded machine, where counting the rows again took 182 s).
 */
import type { Migration } from './migrations.ts'
import { countRows, keysOf, modelOf, partitionsLikeTheLog } from './request-log-counts.ts'

/** The facets but `key_ids`, each with its value in a row of `request_log` (as `alias`), under the names the API answers: a NULL value is in no facet. */
const facetsOf = (alias: string) => [
  ['providers', `${alias}.served_provider`], ['models', modelOf(alias)], ['status', `${alias}.status::text`],
  ['failure_classes', `coalesce(${alias}.failure_class, 'none')`], ['nodes', `${alias}.node_id`], ['picked_by', `${alias}.picked_by`],
  ['moved_off', `${alias}.moved_off::text`], ['check', `${alias}.is_check::text`], ['added_fallback', `${alias}.added_fallback_served::text`],
]

/** A row's `(facet, value)` pairs, for a LATERAL join (history's counts.ts reads a window's partial minutes with them). */
export const facetValues = (alias: string) => `VALUES ${facetsOf(alias).map(([facet, value]) => `('${facet}', ${value})`).join(', ')} UNION ALL SELECT 'key_ids', unnest(${keysOf(alias)})`

/**
 * The facet counts of the rows in `source`, added to those there (`sign` '-': taken off). The
 * rows are grouped per minute and values first, and the groups unpivoted: a LATERAL join per
 * row (facetValues) took Postgres 57-66 µs a row, this 3-10 (EXPLAIN ANALYZE of a 250-row
 * batch). Hours are summed from the minutes. In key order, so nodes writing the same minute at
 * once take its rows' locks in one order.
 */
const countFacets = (source: string, sign = '') => `
  WITH grouped AS (
    SELECT to_timestamp(floor(extract(epoch FROM logged.at) / 60) * 60) AS at, ${facetsOf('logged').map(([, value], index) => `${value} AS f${index}`).join(', ')},
           ${keysOf('logged')} AS keys, count(*) AS requests
      FROM ${source} AS logged GROUP BY ${Array.from({ length: facetsOf('logged').length + 2 }, (_, index) => index + 1).join(', ')}
  ), minutes AS (
    SELECT grouped.at, facet.name, facet.value, sum(grouped.requests) AS requests
      FROM grouped CROSS JOIN LATERAL unnest(ARRAY[${facetsOf('grouped').map(([facet]) => `'${facet}'`).join(', ')}], ARRAY[${facetsOf('grouped').map((_, index) => `grouped.f${index}`).join(', ')}]) AS facet(name, value)
     WHERE facet.value IS NOT NULL GROUP BY 1, 2, 3
    UNION ALL SELECT grouped.at, 'key_ids', key, sum(grouped.requests) FROM grouped CROSS JOIN LATERAL unnest(grouped.keys) AS key GROUP BY 1, 2, 3
  )
  INSERT INTO request_log_facet_counts AS counted (span, at, facet, value, requests)
  SELECT 60, at, name, value, ${sign}requests FROM minutes
  UNION ALL SELECT 3600, to_timestamp(floor(extract(epoch FROM at) / 3600) * 3600), name, value, ${sign}sum(requests) FROM minutes GROUP BY 2, 3, 4
  ORDER BY 1, 2, 3, 4
  ON CONFLICT (span, at, facet, value) DO UPDATE SET requests = counted.requests + EXCLUDED.requests`

export const facetCountsMigration: Migration = {
  version: '0027',
  name: 'request log facet counts',
  sql: `
    CREATE TABLE request_log_facet_counts (
      span integer NOT NULL,
      at timestamptz NOT NULL,
      facet text NOT NULL,
      value text NOT NULL,
      requests bigint NOT NULL
    ) PARTITION BY RANGE (at);
    CREATE UNIQUE INDEX request_log_facet_counts_key ON request_log_facet_counts (span, at, facet, value);

    CREATE OR REPLACE FUNCTION request_log_count() RETURNS trigger LANGUAGE plpgsql AS $count$
    BEGIN
      ${countRows('inserted')};
      ${countFacets('inserted')};
      RETURN NULL;
    END
    $count$;

    -- As the combinations' counts: rows deleted one by one leave zeros, which readers leave out.
    CREATE OR REPLACE FUNCTION request_log_uncount() RETURNS trigger LANGUAGE plpgsql AS $count$
    BEGIN
      ${countRows('deleted', '-')};
      ${countFacets('deleted', '-')};
      RETURN NULL;
    END
    $count$;

    ${partitionsLikeTheLog('request_log_facet_counts')}
    -- The rows already logged, from their combinations' counts (a tenth of the work of counting the rows again).
    INSERT INTO request_log_facet_counts (span, at, facet, value, requests)
    SELECT counted.span, counted.at, facet.name, facet.value, sum(counted.requests)
      FROM request_log_counts AS counted
      JOIN (SELECT id, served_provider, model AS served_model, NULL::text AS requested_model, status, failure_class, node_id, picked_by,
                   moved_off, is_check, added_fallback_served, key_ids, NULL::text AS served_key_id FROM request_log_combinations) AS logged ON logged.id = counted.combination
      CROSS JOIN LATERAL (${facetValues('logged')}) AS facet(name, value)
     WHERE facet.value IS NOT NULL GROUP BY 1, 2, 3, 4 HAVING sum(counted.requests) <> 0;
  `,
}
