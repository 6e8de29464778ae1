/** `/api/providers` and `/api/providers/:name`: config.json's provider objects, key values redacted (a redacted value sent back keeps the stored one). */
import { Hono, type Context } from 'hono'
import type { HonoEnv } from './auth.ts'
import { ConfigStoreError, redactKeySecrets } from '@switchboard/store'
import { checkProviderSource, type ProviderSource } from '../config/load.ts'
import { GatewayError } from '../errors.ts'
import { parseJson } from '../http/body.ts'
import type { ProviderDirectory, WriteOutcome } from '../directory/directory.ts'

/** A provider as the API shows it: values redacted, type spelled out. */
export function presentProvider(source: ProviderSource): Record<string, unknown> {
  return {
    name: source.name,
    type: source.custom_provider_config?.base_provider_type ?? source.name,
    keys: source.keys.map((key) => redactKeySecrets(key)),
    ...(source.network_config ? { network_config: source.network_config } : {}),
    ...(source.custom_provider_config ? { custom_provider_config: source.custom_provider_config } : {}),
  }
}

/** The providers routes, mounted under /api by the app. */
export function providersApi(directory: ProviderDirectory, env: NodeJS.ProcessEnv): Hono<HonoEnv> {
  const api = new Hono<HonoEnv>()

  api.get('/providers', (context) => context.json({ providers: directory.list().map(presentProvider) }))

  api.get('/providers/:name', (context) => {
    const name = context.req.param('name')
    const source = directory.get(name)
    if (!source) throw notFound(name)
    return context.json(presentProvider(source))
  })

  api.post('/providers', async (context) => {
    const body = await readJson(context)
    const name = typeof body.name === 'string' ? body.name : ''
    if (name === '') throw new GatewayError('invalid_request', '"name" is required: the provider\'s name, e.g. "openai" or "groq".', { param: 'name' })
    if (directory.get(name)) throw new GatewayError('provider_exists', `Provider "${name}" already exists; use PUT /api/providers/${name} to replace it.`)
    return save(context, name, body, (source) => directory.create(source), 201)
  })

  api.put('/providers/:name', async (context) => {
    const name = context.req.param('name')
    const body = await readJson(context)
    if (body.name !== undefined && body.name !== name) {
      throw new GatewayError('invalid_request', `"name" in the body ("${String(body.name)}") differs from the URL ("${name}"); rename by DELETE and POST.`, { param: 'name' })
    }
    return save(context, name, body, (source) => directory.replace(source), 200)
  })

  api.delete('/providers/:name', async (context) => {
    const name = context.req.param('name')
    if (!directory.get(name)) throw notFound(name)
    const outcome = await storeCall(() => directory.remove(name))
    return context.json({ deleted: name, ...(outcome.pending ? { pending: true } : {}) }, outcome.pending ? 202 : 200)
  })

  /** Checks the body as provider `name` and writes it; 202 when it is applied here and queued for Postgres, which is not answering. */
  async function save(context: Context<HonoEnv>, name: string, body: Record<string, unknown>, write: (source: ProviderSource) => Promise<WriteOutcome<ProviderSource>>, status: 200 | 201): Promise<Response> {
    // Without the fields the API adds on the way out, so a GET can be PUT back.
    const { name: _name, type: _type, pending: _pending, ...sent } = body
    const { provider, problems } = checkProviderSource(name, sent, env)
    if (!provider) throw new GatewayError('invalid_request', `The provider is not valid: ${problems.join('; ')}`, { param: problems[0]?.split(':')[0] ?? null })
    const outcome = await storeCall(() => write(provider))
    const answer = presentProvider(outcome.result)
    return outcome.pending ? context.json({ ...answer, pending: true }, 202) : context.json(answer, status)
  }

  return api
}

async function storeCall<Result>(call: () => Promise<Result>): Promise<Result> {
  try {
    return await call()
  } catch (error) {
    if (error instanceof ConfigStoreError) {
      if (error.code === 'provider_not_found') throw new GatewayError('provider_not_found', error.message)
      if (error.code === 'provider_exists') throw new GatewayError('provider_exists', error.message)
      throw new GatewayError('invalid_request', error.message, { param: error.field ?? null })
    }
    throw error
  }
}

async function readJson(context: Context<HonoEnv>): Promise<Record<string, unknown>> {
  const body = parseJson(await context.req.text())
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('invalid_request', 'The body must be a JSON object: {"name", "keys": [...], "network_config"?, "custom_provider_config"?}.')
  return body as Record<string, unknown>
}

function notFound(name: string): GatewayError {
  return new GatewayError('provider_not_found', `No provider named "${name}". GET /api/providers lists them.`)
}
