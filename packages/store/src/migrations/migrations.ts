/**
 * The schema, as an append-only list of migrations. Never edit one that has
 * shipped: add a new one. Versions sort as strings, so keep them zero-padded.
 * The list starts at a baseline (0026): the schema 0001-0026 had built, created at once.
 */
import { baselineMigration } from './baseline.ts'
import { facetCountsMigration } from './facet-counts.ts'

/** One schema change, applied once per database. */
export interface Migration {
  version: string
  name: string
  sql: string
  /**
   * Set on a baseline: the schema of every migration up to `replaces`, which it stands for. A
   * database that recorded `replaces` runs `upgrade` instead of `sql`, and its records of the
   * migrations replaced are replaced by this one; a database that recorded only some of them
   * cannot be brought to it (migrate.ts).
   */
  baseline?: { replaces: string; upgrade: string }
}

/** Every migration, oldest first. */
export const migrations: readonly Migration[] = [baselineMigration, facetCountsMigration]
