/** Vertex AI keys (issue 20): project, region and service-account credentials, beside bedrock_key_config. */
import type { Migration } from './migrations.ts'

/** Migration 0017: `keys.vertex_key_config`. */
export const vertexKeysMigration: Migration = {
  version: '0017',
  name: 'vertex key config',
  sql: `
    ALTER TABLE keys ADD COLUMN vertex_key_config jsonb;
  `,
}
