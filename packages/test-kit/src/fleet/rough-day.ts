/**
 * The demo fleet's providers and the simulator's rough day (issue 6, `npm start`): a revoked
 * key, a rate-limited key, a slow provider and an exhausted account, so every part of routing
 * has something to do; and, as the reference tells it (issue 20), an Amazon Bedrock outage of
 * claude-sonnet-4-5 (the bare model moves to Anthropic and Vertex AI) and a Vertex AI key that
 * lost access to gemini-2.5-pro (held on that model only; the Gemini API serves it meanwhile).
 */
import { simulatorSecretKey, simulatorServiceAccount } from '@switchboard/simulator'

/** The demo's AWS access key id (the simulator's SigV4 key pair gives its secret). */
const AWS_ACCESS_KEY = 'AKIADEMOBEDROCK01'
/** The demo's Vertex service account; Vertex requests are recorded under this email. */
const VERTEX_SERVICE_ACCOUNT = 'switchboard-demo@demo-project.iam.gserviceaccount.com'
/** The Bedrock inference profile the demo's claude-sonnet-4-5 maps to. */
const BEDROCK_CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'

/** config.json for a fleet whose providers all live in the simulator at `simulatorUrl`. */
export function roughDayConfig(simulatorUrl: string): unknown {
  const network_config = { base_url: simulatorUrl, retry_backoff_initial: 100, retry_backoff_max: 1000 }
  // One provider of the simulator: these keys, and a quick retry.
  const provider = (...keys: object[]) => ({ keys, network_config })
  return {
    providers: {
      openai: provider(
        { name: 'prod-1', value: 'sk-demo-prod-1-1111', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
        { name: 'prod-2-revoked', value: 'sk-demo-revoked-2222', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
        { name: 'prod-3-busy', value: 'sk-demo-busy-3333', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 },
      ),
      azure: provider({ name: 'eu-1', value: 'azure-demo-eu-4444', models: ['gpt-4o', 'gpt-4o-mini'], weight: 1 }),
      anthropic: provider(
        { name: 'main', value: 'sk-ant-demo-main-5555', models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5'], weight: 1 },
        { name: 'backup-no-credit', value: 'sk-ant-demo-backup-6666', models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5'], weight: 1 },
      ),
      bedrock: provider({
        // With SigV4 credentials `value` is not sent; the access key id names the key in the simulator's records.
        name: 'aws-prod', value: AWS_ACCESS_KEY, models: ['claude-sonnet-4-5'], weight: 1,
        bedrock_key_config: { access_key: AWS_ACCESS_KEY, secret_key: simulatorSecretKey(AWS_ACCESS_KEY), region: 'us-east-1', deployments: { 'claude-sonnet-4-5': BEDROCK_CLAUDE } },
      }),
      vertex: provider({
        // With auth_credentials `value` is not sent; the service account's email names the key.
        name: 'gcp-prod', value: VERTEX_SERVICE_ACCOUNT, models: ['claude-sonnet-4-5', 'gemini-2.5-pro', 'gemini-2.5-flash'], weight: 1,
        aliases: { 'claude-sonnet-4-5': 'claude-sonnet-4-5@20250929' },
        vertex_key_config: { project_id: 'demo-project', region: 'us-east5', auth_credentials: JSON.stringify(simulatorServiceAccount(VERTEX_SERVICE_ACCOUNT, 'demo-project', `${simulatorUrl}/token`)) },
      }),
      gemini: provider({ name: 'ai-studio', value: 'AIzaDemoGeminiKey7777', models: ['gemini-2.5-pro', 'gemini-2.5-flash'], weight: 1 }),
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
  // Bedrock is the fastest way to claude-sonnet-4-5 when it works, so its outage shows: it keeps being tried after each breaker.
  { provider: 'bedrock', latency_ms: { mean: 70, jitter: 20 } },
  { provider: 'vertex', latency_ms: { mean: 130, jitter: 40 } },
  { provider: 'gemini', latency_ms: { mean: 100, jitter: 30 } },
  // Bedrock's claude-sonnet-4-5 is red all day: ServiceUnavailableException on every call.
  { provider: 'bedrock', model: BEDROCK_CLAUDE, fault: 'unavailable' },
  // A Vertex AI key lost access to gemini-2.5-pro (IAM): PERMISSION_DENIED on that model only.
  { provider: 'vertex', key: VERTEX_SERVICE_ACCOUNT, model: 'gemini-2.5-pro', fault: 'model_access' },
]

/** What the load generator asks for, in turn. */
export const DEMO_MODELS = ['gpt-4o-mini', 'openai/gpt-4o', 'claude-3-5-haiku-latest', 'gpt-4o', 'claude-sonnet-4-5', 'gemini-2.5-pro'] as const
