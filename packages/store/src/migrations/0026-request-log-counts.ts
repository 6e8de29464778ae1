/**
 * The request log's counts kept by Postgres (issue 39): per span (60: a minute, 3600: an hour),
 * time and combination of the values `GET /api/logs` counts in its facets (node, provider,
 * model, status, failure class, who picked, moved off, check, added fallback, the keys), how
 * many requests. A statement trigger on `request_log` adds each statement's rows to them, in
 * the statement's own transaction, the way the history rollups are kept (baseline.ts), and
 * another takes deleted rows off: so they count exactly the rows the log holds, whoever wrote
 * them, and the gateway counts nothing itself.
 *
 * They replace the baseline's app-side counts (combinations named by a hash the gateway made of
 * them, sent with each batch as SQL, and the minute they began, `request_log_counts_since`):
 * Postgres names and counts the rows' own values now, and the rows already logged are counted
 * here, so the counts cover the whole log. Partitioned by day like the log, so retention drops
 * both together.
 */
import type { Migration } from './migrations.ts'

/** The columns a count is kept by, and the value of each in a row of `request_log` (history's request-log/counts.ts reads the same). */
const KEPT_BY = [
  ['node_id', 'logged.node_id'],
  ['served_provider', 'logged.served_provider'],
  // The model served, else the one asked for.
  ['model', 'coalesce(logged.served_model, logged.requested_model)'],
  ['status', 'logged.status'],
  ['failure_class', 'logged.failure_class'],
  ['picked_by', 'logged.picked_by'],
  ['moved_off', 'logged.moved_off'],
  ['is_check', 'logged.is_check'],
  ['added_fallback_served', 'logged.added_fallback_served'],
  // Every key the request was served by or tried: `key_ids` holds them only when it tried another.
  ['key_ids', 'coalesce(logged.key_ids, array_remove(ARRAY[logged.served_key_id], NULL))'],
] as const
const COLUMNS = KEPT_BY.map(([column]) => column).join(', ')

/**
 * The counts of the rows in `source` (a table or a transition table), added to those there
 * (`sign` '-': taken from them). A combination is named by a 64-bit hash of its values' record
 * text (NULL and '' read apart; two combinations alike in 64 bits: about one chance in 10^19 a
 * pair) and its values are written once to `request_log_combinations`, so a count is four
 * numbers: a day's counts read a third of the pages they would with the values in each row.
 * A combination's `last_day` moves at most once a day (the update's WHERE), for retention.
 */
const countRows = (source: string, sign = '') => `
  WITH grouped AS (
    SELECT span.seconds AS span, to_timestamp(floor(extract(epoch FROM logged.at) / span.seconds) * span.seconds) AS at,
           ${KEPT_BY.map(([column, value]) => `${value} AS ${column}`).join(', ')}, ${sign}count(*) AS requests
      FROM ${source} AS logged CROSS JOIN unnest(ARRAY[60, 3600]) AS span(seconds)
     GROUP BY ${['1', '2', ...KEPT_BY.map((_, index) => String(index + 3))].join(', ')}
  ), named AS (
    SELECT hashtextextended(ROW(${COLUMNS})::text, 0) AS combination, * FROM grouped
  ), known AS (
    INSERT INTO request_log_combinations AS known (id, ${COLUMNS}, last_day)
    SELECT DISTINCT ON (combination) combination, ${COLUMNS}, (at AT TIME ZONE 'UTC')::date FROM named ORDER BY combination, at DESC
    ON CONFLICT (id) DO UPDATE SET last_day = EXCLUDED.last_day WHERE known.last_day < EXCLUDED.last_day
  )
  INSERT INTO request_log_counts AS counted (span, at, combination, requests)
  SELECT span, at, combination, requests FROM named
  ON CONFLICT (span, at, combination) DO UPDATE SET requests = counted.requests + EXCLUDED.requests`

/** Migration 0026: `request_log_counts` by the row's values, kept by a trigger on `request_log`, the log so far counted. */
export const requestLogCountsMigration: Migration = {
  version: '0026',
  name: 'request log counts kept by a trigger',
  sql: `
    DROP TABLE request_log_counts, request_log_combinations, request_log_counts_since;

    CREATE TABLE request_log_combinations (
      id bigint PRIMARY KEY,
      node_id text NOT NULL,
      served_provider text,
      model text NOT NULL,
      status integer NOT NULL,
      failure_class text,
      picked_by text NOT NULL,
      moved_off boolean NOT NULL,
      is_check boolean NOT NULL,
      added_fallback_served boolean NOT NULL,
      key_ids text[] NOT NULL,
      -- the latest day counted under it: retention deletes it with the last partition that does
      last_day date NOT NULL
    );

    CREATE TABLE request_log_counts (
      span integer NOT NULL,
      at timestamptz NOT NULL,
      combination bigint NOT NULL,
      requests bigint NOT NULL
    ) PARTITION BY RANGE (at);
    CREATE UNIQUE INDEX request_log_counts_key ON request_log_counts (span, at, combination);

    DO $$
    DECLARE child record;
    BEGIN
      FOR child IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
                     FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                    WHERE h.inhparent = 'request_log'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF request_log_counts %s', replace(child.name, 'request_log_p', 'request_log_counts_p'), child.bound);
      END LOOP;
    END $$;

    ${countRows('request_log')};

    CREATE FUNCTION request_log_count() RETURNS trigger LANGUAGE plpgsql AS $count$
    BEGIN
      ${countRows('inserted')};
      RETURN NULL;
    END
    $count$;

    CREATE TRIGGER request_log_count AFTER INSERT ON request_log
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION request_log_count();

    -- Rows deleted one by one (nothing in the gateway does; an operator may) are taken off their
    -- counts, which then may hold zeros: readers leave those out. Retention drops whole days of both.
    CREATE FUNCTION request_log_uncount() RETURNS trigger LANGUAGE plpgsql AS $count$
    BEGIN
      ${countRows('deleted', '-')};
      RETURN NULL;
    END
    $count$;

    CREATE TRIGGER request_log_uncount AFTER DELETE ON request_log
      REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION request_log_uncount();
  `,
}
