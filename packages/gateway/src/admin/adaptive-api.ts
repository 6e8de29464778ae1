/**
 * The adaptive routing admin API: the five switches (and the deprecated `/api/load-balancer-config`),
 * the routes, the held keys and their release (reference/adaptive-load-balancing.txt).
 */
import { Hono, type Context } from 'hono'
import type { HonoEnv } from './auth.ts'
import { z } from 'zod'
import { HoldClearError, SWITCH_NAMES, type AdaptiveBalancer, type Holds, type LoadBalancerSettings } from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import { parseJson } from '../http/body.ts'
import { describeIssue } from '../config/problems.ts'
import { loadBalancerSchema } from '../config/schema.ts'
import type { Dispatcher } from '../dispatch/dispatcher.ts'
import type { SaveSettings } from '../settings/save.ts'

export interface AdaptiveApiComponents {
  balancer: AdaptiveBalancer
  holds: Holds
  dispatcher: Dispatcher
  settings(): LoadBalancerSettings
  /** Saves and applies the switches (`pending`: Postgres did not answer in time); with history's, both or neither. */
  saveSettings: SaveSettings
  keyName(provider: string, keyId: string): string | undefined
  now(): number
  /** `history_enabled` and `history_retention_days`, shown and saved beside the switches. */
  history?: { settings(): Record<string, unknown> }
}

const clearBody = z.strictObject({
  provider: z.string().min(1).optional(),
  key_id: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
})

const DEPRECATION_WARNING = '299 - "/api/load-balancer-config is deprecated; use /api/adaptive-routing/config"'

/** The routes, mounted under /api. */
export function adaptiveApi(components: AdaptiveApiComponents): Hono<HonoEnv> {
  const api = new Hono<HonoEnv>()

  const getConfig = (context: Context<HonoEnv>) => context.json({ ...components.settings(), ...components.history?.settings() })
  const putConfig = async (context: Context<HonoEnv>) => {
    // The same five switches as config.json; a PUT is a full replacement: an omitted switch is false (reference: Configuration).
    const parsed = loadBalancerSchema.safeParse(await readJson(context, true))
    if (!parsed.success) throw new GatewayError('invalid_request', `The settings are not valid: ${parsed.error.issues.map((issue) => describeIssue(issue)).join('; ')}. Send all five switches as true or false.`)
    const settings = Object.fromEntries(SWITCH_NAMES.map((name) => [name, parsed.data[name] ?? false])) as LoadBalancerSettings
    // Settings beyond the five keep their value unless sent (design.md).
    const { history_enabled, history_retention_days } = parsed.data
    const { pending } = await components.saveSettings(settings, { history_enabled, history_retention_days })
    const answer = { ...settings, ...components.history?.settings() }
    return context.json(pending ? { ...answer, pending: true } : answer, pending ? 202 : 200)
  }
  const deprecated = (handler: (context: Context<HonoEnv>) => Response | Promise<Response>) => async (context: Context<HonoEnv>) => {
    context.header('Deprecation', 'true')
    context.header('Warning', DEPRECATION_WARNING)
    context.header('Link', '</api/adaptive-routing/config>; rel="successor-version"')
    return handler(context)
  }

  api.get('/adaptive-routing/config', getConfig)
  api.put('/adaptive-routing/config', putConfig)
  api.get('/load-balancer-config', deprecated(getConfig))
  api.put('/load-balancer-config', deprecated(putConfig))

  api.get('/adaptive-routing/routes', (context) =>
    context.json({
      routes: components.balancer.routes().map((route) => ({
        provider: route.provider, model: route.model, key_id: route.keyId, key_name: route.keyName, state: route.state, held: route.held,
        weight: round(route.weight), expected_share: round(route.expectedShare), actual_share: round(route.actualShare), error_rate: round(route.errorRate),
        latency_ms: route.latencyMs === null ? null : Math.round(route.latencyMs),
        in_flight: route.inFlight,
        score: {
          error_penalty: round(route.parts.errorPenalty),
          latency_score: round(route.parts.latencyPenalty),
          utilisation: round(route.parts.utilisation),
          recovery_progress: round(route.parts.recoveryProgress),
        },
      })),
    }),
  )

  api.get('/adaptive-routing/conditions', (context) => {
    const conditions = components.holds.conditions((provider, keyId) => components.keyName(provider, keyId))
    return context.json({ conditions, count: conditions.length })
  })

  api.post('/adaptive-routing/conditions/clear', async (context) => {
    const parsed = clearBody.safeParse(await readJson(context, false))
    if (!parsed.success) throw new GatewayError('invalid_request', `The release is not valid: ${parsed.error.issues.map((issue) => describeIssue(issue)).join('; ')}.`)
    const filter = { provider: parsed.data.provider, keyId: parsed.data.key_id, model: parsed.data.model }
    let outcome
    try {
      outcome = components.holds.clear(filter, components.now())
    } catch (error) {
      if (error instanceof HoldClearError) throw new GatewayError('invalid_request', error.message, { param: error.field })
      throw error
    }
    // An operator release sends the routes to recovering, on every node (the tombstones carry it).
    components.dispatcher.released(outcome.changed)
    return context.json({ cleared: outcome.cleared, count: outcome.count })
  })

  return api
}

async function readJson(context: Context<HonoEnv>, required: boolean): Promise<unknown> {
  const text = await context.req.text()
  if (text.trim() === '') {
    if (required) throw new GatewayError('invalid_request', 'Send a JSON body with all five switches.')
    return {}
  }
  return parseJson(text)
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000
}
