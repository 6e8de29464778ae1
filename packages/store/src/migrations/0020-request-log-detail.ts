/**
 * The request log's compact rows (issue 15): `detail` (text) holds what the row's other columns
 * do not, as the JSON array of history's request-log/entry.ts; `entry` (json, the whole record)
 * stays for the rows written before and is null from now on. Postgres checking `entry` as JSON on
 * every row was server CPU paid per request for text the gateway wrote itself and reads back
 * whole (bench/request-log-pg.ts). Changing `entry`'s type instead would rewrite every
 * partition; a new nullable column rewrites none.
 */
import type { Migration } from './migrations.ts'

/** Migration 0020: `request_log.detail`, and `entry` nullable. */
export const requestLogDetailMigration: Migration = {
  version: '0020',
  name: 'request log detail',
  sql: `ALTER TABLE request_log ALTER COLUMN entry DROP NOT NULL, ADD COLUMN detail text;`,
}
