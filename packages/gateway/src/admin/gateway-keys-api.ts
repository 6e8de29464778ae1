/**
 * `GET|POST /api/gateway-keys`, `GET|DELETE /api/gateway-keys/:id` (issue 13). The secret is made
 * here and shown once, in the POST's answer; Postgres keeps its SHA-256. A DELETE revokes the key
 * on every node.
 */
import { Hono } from 'hono'
import type { HonoEnv } from './auth.ts'
import { createGatewayKey, GatewayKeyConflict, listGatewayKeys, revokeGatewayKey, type StoredGatewayKey, type DatabasePool } from '@switchboard/store'
import { gatewayKeySchema } from '../config/schema.ts'
import { describeIssue } from '../config/problems.ts'
import { fromStore, GatewayError } from '../errors.ts'
import { parseJson } from '../http/body.ts'
import { hashSecret, keyLimits, newSecret, redactSecret, type GatewayKeyRing } from '../access/gateway-keys.ts'

export interface GatewayKeysApiComponents {
  pool: DatabasePool
  keys: GatewayKeyRing
  /** Re-reads the keys from the store and tells every node to; never throws (the write it follows landed). */
  changed(): Promise<void>
}

const createSchema = gatewayKeySchema.omit({ value: true })

/** A store call; Postgres unreachable is a 503 that says to retry (a key change is never half applied). */
const stored = <Result>(call: () => Promise<Result>) => fromStore(call, 'PostgreSQL is not answering, so gateway keys cannot be changed or listed right now; retry shortly. Keys already known keep working.')

/** A key as the API shows it: never the secret. */
export function presentGatewayKey(key: StoredGatewayKey): Record<string, unknown> {
  return {
    id: key.id, name: key.name, redacted: key.redacted, providers: key.providers, models: key.models,
    requests_per_minute: key.requestsPerMinute, tokens_per_minute: key.tokensPerMinute, origin: key.origin, created_at: key.createdAt.toISOString(),
  }
}

/** The gateway-keys routes, mounted under /api by the app. */
export function gatewayKeysApi(components: GatewayKeysApiComponents): Hono<HonoEnv> {
  const api = new Hono<HonoEnv>()

  api.get('/gateway-keys', async (context) => context.json({ gateway_keys: (await stored(() => listGatewayKeys(components.pool))).map(presentGatewayKey) }))

  api.get('/gateway-keys/:id', async (context) => {
    const id = context.req.param('id')
    const key = (await stored(() => listGatewayKeys(components.pool))).find((candidate) => candidate.id === id)
    if (!key) throw notFound(id)
    return context.json(presentGatewayKey(key))
  })

  api.post('/gateway-keys', async (context) => {
    const parsed = createSchema.safeParse(parseJson(await context.req.text()))
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => describeIssue(issue))
      throw new GatewayError('invalid_request', `The gateway key is not valid: ${problems.join('; ')}. Send {"name", "providers"?, "models"?, "requests_per_minute"?, "tokens_per_minute"?}.`, { param: problems[0]?.split(':')[0] || null })
    }
    const secret = newSecret()
    let created: StoredGatewayKey
    try {
      created = await stored(() =>
        createGatewayKey(components.pool, { name: parsed.data.name, secretHash: hashSecret(secret), redacted: redactSecret(secret), ...keyLimits(parsed.data) }),
      )
    } catch (error) {
      if (error instanceof GatewayKeyConflict) throw new GatewayError('gateway_key_exists', `A gateway key named "${parsed.data.name}" already exists; revoke it first or choose another name.`, { param: 'name' })
      throw error
    }
    // Serves here at once, even if the store cannot be read back right after.
    components.keys.put(created)
    await components.changed()
    // The only time the secret is shown.
    return context.json({ ...presentGatewayKey(created), key: secret }, 201)
  })

  api.delete('/gateway-keys/:id', async (context) => {
    const id = context.req.param('id')
    const revoked = await stored(() => revokeGatewayKey(components.pool, id))
    if (!revoked) throw notFound(id)
    components.keys.remove(id)
    await components.changed()
    return context.json({ revoked: id })
  })

  return api
}

function notFound(id: string): GatewayError {
  return new GatewayError('gateway_key_not_found', `No active gateway key with id "${id}". GET /api/gateway-keys lists them.`)
}
