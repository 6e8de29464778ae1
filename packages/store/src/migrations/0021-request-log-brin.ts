/**
 * The request log's index (issue 15): a BRIN index on `at` instead of the primary key (at, id).
 * The log is written at request rate and read by time window: the B-tree took an insert (and its
 * WAL record) per row, about a seventh of the server's CPU per row (bench/request-log-pg.ts
 * `binary250+brin`), and every query it served scans its window anyway (the total and the
 * facets count it whole). A BRIN index keeps one summary per 128 pages, so a window, and a
 * request found by its id (which carries its time), read only the pages of their time.
 * `autosummarize` summarizes each range as it fills; without it, the pages written since the
 * last vacuum would be read by every query. The request id stays unique by how it is made
 * (request-log/id.ts), not by the table.
 *
 * And `key_ids` may be NULL: a request that tried no key but the one that served it (most of
 * them) leaves it NULL, and the queries read `served_key_id` instead; its one-element array took
 * about 45 bytes of a 550-byte row.
 *
 * And the partitions made so far take no vacuum for inserts, as new ones are made
 * (history's request-log/request-log.ts, PARTITION_STORAGE says why).
 */
import type { Migration } from './migrations.ts'

/** Migration 0021: `request_log` indexed by BRIN on `at`, without its primary key; `key_ids` nullable; no insert vacuum on its partitions. */
export const requestLogBrinMigration: Migration = {
  version: '0021',
  name: 'request log brin and sparse key ids',
  sql: `
    ALTER TABLE request_log DROP CONSTRAINT IF EXISTS request_log_pkey;
    CREATE INDEX IF NOT EXISTS request_log_at ON request_log USING brin (at) WITH (autosummarize = on);
    ALTER TABLE request_log ALTER COLUMN key_ids DROP NOT NULL;
    DO $$
    DECLARE child regclass;
    BEGIN
      FOR child IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'request_log'::regclass LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_vacuum_insert_threshold = -1)', child);
      END LOOP;
    END $$;
  `,
}
