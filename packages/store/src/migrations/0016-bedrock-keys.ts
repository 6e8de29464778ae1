/** Amazon Bedrock keys (issue 20): their SigV4 credentials, region and model ids, beside azure_key_config. */
import type { Migration } from './migrations.ts'

/** Migration 0016: `keys.bedrock_key_config`. */
export const bedrockKeysMigration: Migration = {
  version: '0016',
  name: 'bedrock key config',
  sql: `
    ALTER TABLE keys ADD COLUMN bedrock_key_config jsonb;
  `,
}
