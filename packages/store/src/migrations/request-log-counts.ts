/**
 * The request log's counts per combination of the values `GET /api/logs` counts (baseline.ts
 * says what they are for): their tables and the statement triggers that keep them, and the SQL
 * pieces the migrations after the baseline reuse.
 */

/** A column of a row of `request_log` read as `alias` (none: unqualified). */
const at = (alias: string, column: string) => (alias === '' ? column : `${alias}.${column}`)
/** The model a request counts under: the one served, else the one asked for. */
export const modelOf = (alias = '') => `coalesce(${at(alias, 'served_model')}, ${at(alias, 'requested_model')})`
/** Every key a request was served by or tried: `key_ids` holds them only when it tried another (most rows hold NULL there). */
export const keysOf = (alias = '') => `coalesce(${at(alias, 'key_ids')}, array_remove(ARRAY[${at(alias, 'served_key_id')}], NULL))`

/** The columns a count is kept by, and the value of each in a row of `request_log` read as `alias`. */
const keptBy = (alias: string): [column: string, value: string][] => [
  ...['node_id', 'served_provider'].map((column): [string, string] => [column, at(alias, column)]),
  ['model', modelOf(alias)],
  ...['status', 'failure_class', 'picked_by', 'moved_off', 'is_check', 'added_fallback_served'].map((column): [string, string] => [column, at(alias, column)]),
  ['key_ids', keysOf(alias)],
]
/** The columns of a combination, in the order the counts keep them. */
export const KEPT_COLUMNS = keptBy('').map(([column]) => column)
/** A row's kept values (as `alias`) as a select list, each under its column's name (history counts a window's partial minutes by them). */
export const keptValues = (alias: string) => keptBy(alias).map(([column, value]) => `${value} AS ${column}`).join(', ')

/** SQL that gives `table` a partition for each day the request log has (as history's day-partitions.ts names them). */
export const partitionsLikeTheLog = (table: string) => `DO $$
    DECLARE child record;
    BEGIN
      FOR child IN SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
                     FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                    WHERE h.inhparent = 'request_log'::regclass LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF ${table} %s', replace(child.name, 'request_log_p', '${table}_p'), child.bound);
      END LOOP;
    END $$;`

/**
 * The counts of the rows in `source` (a table or a transition table), added to those there
 * (`sign` '-': taken from them). A combination is named by a 64-bit hash of its values' record
 * text (NULL and '' read apart; two combinations alike in 64 bits: about one chance in 10^19 a
 * pair) and its values are written once to `request_log_combinations`, so a count is four
 * numbers: a day's counts read a third of the pages they would with the values in each row.
 * A combination's `last_day` moves at most once a day (the update's WHERE), for retention.
 */
export const countRows = (source: string, sign = '') => `
  WITH grouped AS (
    SELECT span.seconds AS span, to_timestamp(floor(extract(epoch FROM logged.at) / span.seconds) * span.seconds) AS at,
           ${keptValues('logged')}, ${sign}count(*) AS requests
      FROM ${source} AS logged CROSS JOIN unnest(ARRAY[60, 3600]) AS span(seconds)
     GROUP BY ${['1', '2', ...KEPT_COLUMNS.map((_, index) => String(index + 3))].join(', ')}
  ), named AS (
    SELECT hashtextextended(ROW(${KEPT_COLUMNS.join(', ')})::text, 0) AS combination, * FROM grouped
  ), known AS (
    INSERT INTO request_log_combinations AS known (id, ${KEPT_COLUMNS.join(', ')}, last_day)
    SELECT DISTINCT ON (combination) combination, ${KEPT_COLUMNS.join(', ')}, (at AT TIME ZONE 'UTC')::date FROM named ORDER BY combination, at DESC
    ON CONFLICT (id) DO UPDATE SET last_day = EXCLUDED.last_day WHERE known.last_day < EXCLUDED.last_day
  )
  INSERT INTO request_log_counts AS counted (span, at, combination, requests)
  SELECT span, at, combination, requests FROM named
  ON CONFLICT (span, at, combination) DO UPDATE SET requests = counted.requests + EXCLUDED.requests`

export const REQUEST_LOG_COUNTS = `
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
`
