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
 */
import type { Migration } from './migrations.ts'

/** Migration 0021: `request_log` indexed by BRIN on `at`, without its primary key. */
export const requestLogBrinMigration: Migration = {
  version: '0021',
  name: 'request log brin',
  sql: `
    ALTER TABLE request_log DROP CONSTRAINT IF EXISTS request_log_pkey;
    CREATE INDEX IF NOT EXISTS request_log_at ON request_log USING brin (at) WITH (autosummarize = on);
  `,
}
