/**
 * Every adapter, through the one shared suite (test/adapter-suite.ts), against the
 * simulator. A new adapter is added here with one `adapterSuite({...})` call.
 */
import { simulatorSecretKey, simulatorServiceAccount } from '@switchboard/simulator'
import { createAnthropicAdapter } from './anthropic/adapter.ts'
import { createAzureAdapter } from './azure/adapter.ts'
import { createBedrockAdapter } from './bedrock/adapter.ts'
import { createGoogleAdapter } from './google/adapter.ts'
import { createOpenAiAdapter } from './openai/adapter.ts'
import { adapterSuite, suiteNetwork } from '../test/adapter-suite.ts'

const key = (value: string) => ({ id: 'k1', name: 'suite-key', value, models: ['*'], weight: 1 })

adapterSuite({
  label: 'openai',
  dialect: 'openai',
  create: (baseUrl) => createOpenAiAdapter({ name: 'openai', type: 'openai', network: suiteNetwork(baseUrl) }),
  key: key('sk-suite-openai-0001'),
  model: 'gpt-4o',
  inexpressible: 'OpenAI chat is the internal format: every chat body passes through',
  inBandStreamErrors: "the simulator's OpenAI dialect sends no in-band error event",
})

adapterSuite({
  label: 'compatible (groq on the OpenAI wire format)',
  dialect: 'openai',
  create: (baseUrl) => createOpenAiAdapter({ name: 'groq', type: 'openai', network: suiteNetwork(baseUrl) }),
  key: key('gsk-suite-groq-0001'),
  model: 'llama-3.3-70b-versatile',
  inexpressible: 'an OpenAI-compatible upstream takes every chat body as it is',
  inBandStreamErrors: "the simulator's OpenAI dialect sends no in-band error event",
})

adapterSuite({
  label: 'azure',
  dialect: 'azure',
  create: (baseUrl) => createAzureAdapter({ name: 'azure', type: 'azure', network: suiteNetwork(baseUrl) }),
  key: { ...key('azure-suite-key-0001'), azure_key_config: { deployments: { 'gpt-4o': 'gpt-4o-prod' } } },
  model: 'gpt-4o',
  inexpressible: 'Azure OpenAI takes every chat body as it is',
  inBandStreamErrors: "the simulator's Azure dialect sends no in-band error event",
  rateLimitHeaders: 'Azure sends remaining counts but no reset time: a spent window shows as its 429 and retry-after',
  // Azure's gateway layer answers these with bare 403s whose code is the status: read as a refused
  // credential (the whole key held either way), except "Out of call volume quota", which says it is
  // quota (issue 36, item 7). Finer classes are issue #12's (failure classes).
  classes: {
    model_access: { failureClass: 'credential', scope: 'key' },
    region_blocked: { failureClass: 'credential', scope: 'key' },
  },
})

adapterSuite({
  label: 'anthropic',
  dialect: 'anthropic',
  create: (baseUrl) => createAnthropicAdapter({ name: 'anthropic', type: 'anthropic', network: suiteNetwork(baseUrl) }),
  key: key('sk-ant-suite-0001'),
  model: 'claude-sonnet-4-5',
  inexpressible: { n: 2 },
  classes: {
    // Anthropic names the missing model and nothing else (404 not_found_error): the same answer for gone and never-there.
    model_deprecated: { failureClass: 'model_access', scope: 'model' },
  },
})

const ACCESS_KEY = 'AKIASUITE00000001'
adapterSuite({
  label: 'bedrock (SigV4)',
  dialect: 'bedrock',
  create: (baseUrl) => createBedrockAdapter({ name: 'bedrock', type: 'bedrock', network: suiteNetwork(baseUrl) }),
  key: { ...key('unused-for-sigv4'), bedrock_key_config: { region: 'us-east-1', access_key: ACCESS_KEY, secret_key: simulatorSecretKey(ACCESS_KEY) } },
  wireKey: ACCESS_KEY,
  model: 'anthropic.claude-sonnet-4-5-20250929-v1:0',
  inexpressible: { n: 2 },
  rateLimitHeaders: 'Bedrock sends no rate-limit headers',
  // ThrottlingException carries no retry-after: the SDKs back off on their own.
  waitHints: false,
  classes: {
    // ServiceQuotaExceededException says "resubmit your request later": a rate limit, not a spent balance.
    insufficient_quota: { failureClass: 'rate_limit', scope: 'model' },
  },
})

const GEMINI_KEY = 'AIzaSuiteGeminiKey0001'
adapterSuite({
  label: 'gemini (Gemini API)',
  dialect: 'gemini',
  create: (baseUrl) => createGoogleAdapter({ name: 'gemini', type: 'gemini', network: suiteNetwork(baseUrl) }),
  key: key(GEMINI_KEY),
  model: 'gemini-2.5-flash',
  inexpressible: { n: 2 },
  rateLimitHeaders: 'Gemini sends no rate-limit headers; its 429 carries RetryInfo',
})

/** A Vertex key: its service account's token_uri is the suite's simulator, known once `create` is called. */
function vertexKey(email: string) {
  const subject = { ...key('service-account'), vertex_key_config: { project_id: 'suite-project', region: 'us-central1', auth_credentials: '' } }
  const create = (baseUrl: string) => {
    subject.vertex_key_config.auth_credentials = JSON.stringify(simulatorServiceAccount(email, 'suite-project', `${baseUrl}/token`))
    return createGoogleAdapter({ name: 'vertex', type: 'vertex', network: suiteNetwork(baseUrl) })
  }
  return { key: subject, create }
}

for (const [what, model, email] of [
  ['Gemini on Vertex AI, OAuth2', 'gemini-2.5-pro', 'suite-gemini@suite-project.iam.gserviceaccount.com'],
  ['Claude on Vertex AI through rawPredict', 'claude-sonnet-4-5@20250929', 'suite-claude@suite-project.iam.gserviceaccount.com'],
] as const) {
  const subject = vertexKey(email)
  adapterSuite({
    label: `vertex (${what})`,
    dialect: 'vertex',
    create: subject.create,
    key: subject.key,
    wireKey: email,
    model,
    inexpressible: { n: 2 },
    rateLimitHeaders: 'Vertex sends no rate-limit headers; its 429 carries RetryInfo',
  })
}
