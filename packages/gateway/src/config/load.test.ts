import { describe, expect, it } from 'vitest'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deriveKeyId } from '@switchboard/store'
import { checkProviderSource, ConfigError, loadConfig, parseConfig, resolveProviders } from './load.ts'

const key = (extra: Record<string, unknown> = {}) => ({ name: 'k', value: 'sk-test', models: ['*'], weight: 1, ...extra })

function problemsOf(json: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(json, 'config.json', env)
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('parseConfig', () => {
  it('names the JSON path and the reason of a wrong type', () => {
    const problems = problemsOf({ providers: { openai: { keys: [key(), key({ name: 'k2', weight: 'heavy' })] } } })
    expect(problems).toEqual([expect.stringMatching(/^providers\.openai\.keys\[1\]\.weight: expected number/)])
  })

  it('names unknown fields and missing required ones', () => {
    const problems = problemsOf({ providers: { openai: { keys: [{ name: 'k', models: ['*'], wieght: 2 }] } } })
    expect(problems).toContain('providers.openai.keys[0]: unknown field "wieght"')
    expect(problems.some((problem) => problem.startsWith('providers.openai.keys[0].value: expected string'))).toBe(true)
  })

  it('resolves env.VAR and reports a missing variable at its path', () => {
    const config = parseConfig({ providers: { openai: { keys: [key({ value: 'env.OPENAI_KEY' })] } } }, 'c', { OPENAI_KEY: 'sk-from-env' })
    expect(config.providers[0]!.keys[0]!.value).toBe('sk-from-env')
    expect(problemsOf({ providers: { openai: { keys: [key({ value: 'env.NOPE' })] } } })).toEqual(['providers.openai.keys[0].value: environment variable NOPE is not set'])
  })

  it('rejects an unknown provider name unless it declares its base provider type', () => {
    expect(problemsOf({ providers: { groq: { keys: [key()], network_config: { base_url: 'https://api.groq.com/openai' } } } })[0]).toMatch(/^providers\.groq: unknown provider/)
    const config = parseConfig({ providers: { groq: { keys: [key()], network_config: { base_url: 'https://api.groq.com/openai' }, custom_provider_config: { base_provider_type: 'openai' } } } }, 'c', {})
    expect(config.providers[0]).toMatchObject({ name: 'groq', type: 'openai' })
  })

  it('applies network defaults and gives keys without an id a stable one', () => {
    const config = parseConfig({ providers: { openai: { keys: [key({ name: 'prod-1' })] } } }, 'c', {})
    const provider = config.providers[0]!
    expect(provider.network).toMatchObject({ base_url: 'https://api.openai.com', max_retries: 2, retry_backoff_initial: 500, retry_backoff_max: 5000, default_request_timeout_in_seconds: 30 })
    expect(provider.keys[0]!.id).toBe(deriveKeyId('openai', 'prod-1'))
  })

  it('rejects duplicate key names and a backoff max below the initial', () => {
    const problems = problemsOf({ providers: { openai: { keys: [key(), key()], network_config: { retry_backoff_initial: 900, retry_backoff_max: 100 } } } })
    expect(problems).toContain('providers.openai.network_config.retry_backoff_max: must be at least retry_backoff_initial (900)')
    expect(problems).toContain('providers.openai.keys[1].name: duplicate key name "k"')
  })

  it('requires a base_url for an OpenAI-compatible provider', () => {
    expect(problemsOf({ providers: { vllm: { keys: [key()], custom_provider_config: { base_provider_type: 'openai' } } } })).toEqual([
      'providers.vllm.network_config.base_url: required for this provider (no default upstream is known)',
    ])
  })
})

describe('the file as written', () => {
  it('keeps env.VAR references for the store while resolving them to run', () => {
    const config = parseConfig({ providers: { openai: { keys: [key({ value: 'env.OPENAI_KEY' })] } } }, 'c', { OPENAI_KEY: 'sk-secret-value' })
    expect(config.source.providers.openai!.keys[0]!.value).toBe('env.OPENAI_KEY')
    expect(config.providers[0]!.keys[0]!.value).toBe('sk-secret-value')
  })

  it('checks a provider body from the API with paths relative to the body', () => {
    expect(checkProviderSource('openai', { keys: [key({ weight: -1 })] }).problems).toEqual([expect.stringMatching(/^keys\[0\]\.weight: /)])
    expect(checkProviderSource('groq', { keys: [key()] }).problems[0]).toMatch(/^name: unknown provider "groq"/)
    expect(checkProviderSource('openai', { keys: [key()] })).toMatchObject({ provider: { name: 'openai' }, problems: [] })
  })

  it('leaves out a stored provider whose variable is unset on this node, and says so', () => {
    const reported: string[] = []
    const providers = resolveProviders([{ name: 'openai', keys: [key({ value: 'env.GONE' })] }, { name: 'anthropic', keys: [key()] }], {}, (problem) => reported.push(problem))
    expect(providers.map((provider) => provider.name)).toEqual(['anthropic'])
    expect(reported).toEqual(['provider openai left out: keys[0].value: environment variable GONE is not set'])
  })
})

describe('loadConfig', () => {
  it('says when the file is missing or not JSON, without a stack', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-config-'))
    await expect(loadConfig(join(dir, 'missing.json'))).rejects.toThrow(/file not found/)
    const file = join(dir, 'bad.json')
    await writeFile(file, '{"providers": ')
    await expect(loadConfig(file)).rejects.toThrow(/not valid JSON/)
  })
})

describe('Gemini and Vertex AI providers (issue 20)', () => {
  const account = { type: 'service_account', client_email: 'sa@my-project.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n' }

  it('takes a gemini key with the public endpoint by default', () => {
    const config = parseConfig({ providers: { gemini: { keys: [key({ value: 'AIzaSyExample000000' })] } } }, 'c', {})
    expect(config.providers[0]).toMatchObject({ type: 'gemini', network: { base_url: 'https://generativelanguage.googleapis.com' } })
  })

  it('takes a vertex key whose credentials come from env as JSON text, or as an object; its endpoint follows the region', () => {
    const fromEnv = parseConfig({ providers: { vertex: { keys: [key({ vertex_key_config: { project_id: 'my-project', region: 'us-central1', auth_credentials: 'env.GCP_SA' } })] } } }, 'c', { GCP_SA: JSON.stringify(account) })
    expect(fromEnv.providers[0]).toMatchObject({ type: 'vertex', network: { base_url: '' } })
    expect(JSON.parse(fromEnv.providers[0]!.keys[0]!.vertex_key_config!.auth_credentials!)).toEqual(account)
    const inline = parseConfig({ providers: { vertex: { keys: [key({ vertex_key_config: { project_id: 'my-project', region: 'global', auth_credentials: account } })] } } }, 'c', {})
    expect(JSON.parse(inline.providers[0]!.keys[0]!.vertex_key_config!.auth_credentials!)).toEqual(account)
  })

  it('names what is wrong with a vertex key without echoing its credentials', () => {
    const missing = problemsOf({ providers: { vertex: { keys: [key()] } } })
    expect(missing).toEqual([expect.stringMatching(/^providers\.vertex\.keys\[0\]\.vertex_key_config: required for a Vertex AI key/)])
    const partial = problemsOf({ providers: { vertex: { keys: [key({ vertex_key_config: { project_id: 'my-project', region: 'us-central1', auth_credentials: '{"private_key":"secret-material"}' } })] } } })
    expect(partial).toEqual(['providers.vertex.keys[0].vertex_key_config.auth_credentials: the service-account credentials need "client_email" and "private_key"'])
    expect(partial.join(' ')).not.toContain('secret-material')
    expect(problemsOf({ providers: { vertex: { keys: [key({ vertex_key_config: { project_id: 'Bad Project', region: 'us-central1', auth_credentials: account } })] } } })[0]).toMatch(/project_id: a Google Cloud project id/)
  })
})
