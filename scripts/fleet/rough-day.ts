/**
 * The demo fleet's providers and the simulator's rough day (issue 6, `npm start`): a revoked
 * key, a rate-limited key, a slow provider and an exhausted account, so every part of routing
 * has something to do.
 */

/** config.json for a fleet whose providers all live in the simulator at `simulatorUrl`. */
export function roughDayConfig(simulatorUrl: string): unknown {
  const network = { base_url: simulatorUrl, retry_backoff_initial: 100, retry_backoff_max: 1000 }
  return {
    providers: {
      openai: {
        keys: [
          { name: 'prod-1', value: 'sk-demo-prod-1-1111', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
          { name: 'prod-2-revoked', value: 'sk-demo-revoked-2222', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
          { name: 'prod-3-busy', value: 'sk-demo-busy-3333', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
        ],
        network_config: network,
      },
      azure: {
        keys: [{ name: 'eu-1', value: 'azure-demo-eu-4444', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 }],
        network_config: network,
      },
      anthropic: {
        keys: [
          { name: 'main', value: 'sk-ant-demo-main-5555', models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5'], weight: 1 },
          { name: 'backup-no-credit', value: 'sk-ant-demo-backup-6666', models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5'], weight: 1 },
        ],
        network_config: network,
      },
    },
  }
}

/** The simulator's rules for the rough day. */
export const ROUGH_DAY_RULES = [
  // A key someone revoked without telling anyone.
  { key: 'sk-demo-revoked-2222', fault: 'invalid_api_key' },
  // A key on a small rate limit: its window runs out, the region backs it off, 429s follow.
  { key: 'sk-demo-busy-3333', rpm: 30 },
  // A slow provider: Azure answers, but late.
  { provider: 'azure', latency_ms: { mean: 900, jitter: 300 } },
  // An account out of credit.
  { key: 'sk-ant-demo-backup-6666', fault: 'insufficient_quota' },
  // Everyone else: a little latency, as real upstreams have.
  { provider: 'openai', latency_ms: { mean: 60, jitter: 20 } },
  { provider: 'anthropic', latency_ms: { mean: 120, jitter: 40 } },
]

/** What the load generator asks for, in turn. */
export const DEMO_MODELS = ['gpt-4o-mini', 'openai/gpt-4o', 'claude-3-5-haiku-latest', 'gpt-4o'] as const
