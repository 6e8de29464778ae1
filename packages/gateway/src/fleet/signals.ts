/**
 * The fleet's signals besides holds: rate-limit backoffs shared within a region, gateway key
 * limits (issue 13: leases from the count's owner, token counts gossiped), and config changes
 * announced fleet-wide.
 */
import type { Cluster } from '@switchboard/cluster'
import type { RateLimitBackoff } from '@switchboard/routing'
import type { FleetComponents } from './fleet.ts'
import { configChange, leaseRequest, leaseResponse, MAX_RATE_LIMIT_MS, PROTOCOLS, rateLimitSignal, tokenUsage, type ConfigChange } from './messages.ts'

export interface SignalsComponents extends Pick<FleetComponents, 'dispatcher' | 'metrics' | 'logger' | 'now' | 'limiter' | 'applySettings' | 'reloadGatewayKeys' | 'reloadProviders'> {
  /** A settings change from `nodeId`, sent at `sentAt` by its clock, applied here now. */
  settingsFrom?(nodeId: string, sentAt: number): void
}

export interface Signals {
  publishRateLimit(backoff: RateLimitBackoff): void
  publishConfig(change: ConfigChange): void
}

/** Subscribes to the signal topics, serves gateway key leases, and connects the limiter to the fleet. */
export async function carrySignals(fleet: Cluster, components: SignalsComponents): Promise<Signals> {
  const { dispatcher, metrics, logger, now } = components
  const rateTopic = fleet.topic('rate-limits', rateLimitSignal, { scope: 'region', coalesceKey: (message) => `${message.provider}\u0000${message.key_id}\u0000${message.model}` })
  const configTopic = fleet.topic('config', configChange, { scope: 'fleet', coalesceKey: (message) => message.kind })
  rateTopic.subscribe((message, _from, meta) => {
    if (meta.peerId === fleet.peerId) return
    if (message.until_ms > now() + MAX_RATE_LIMIT_MS) return void metrics.clusterDropped.inc({ reason: 'implausible_rate_limit' })
    dispatcher.backOff({ provider: message.provider, keyId: message.key_id, model: message.model, untilMs: message.until_ms })
  })
  configTopic.subscribe((message, _from, meta) => {
    if (meta.peerId === fleet.peerId) return
    if (message.kind === 'settings') {
      components.applySettings(message.settings)
      components.settingsFrom?.(meta.nodeId, meta.sentAt)
    }
    else if (message.kind === 'gateway_keys') components.reloadGatewayKeys().catch((error: unknown) => logger.warn({ err: error }, 'could not reload gateway keys a peer changed'))
    else components.reloadProviders().catch((error: unknown) => logger.warn({ err: error }, 'could not reload providers a peer changed'))
  })
  // Gateway key limits: the lowest node id alive owns every key's request count and leases it out.
  const usageTopic = fleet.topic('gateway-key-usage', tokenUsage, { scope: 'fleet', coalesceKey: (message) => message.key_id })
  usageTopic.subscribe((message, _from, meta) => {
    if (meta.peerId !== fleet.peerId) components.limiter.peerUsage(meta.nodeId, message)
  })
  await fleet.handle(PROTOCOLS.lease, leaseRequest, leaseResponse, async (request) => ({ granted: components.limiter.grant(request.key_id, request.window, request.limit) }))
  components.limiter.setPeers({
    owner: () => {
      let owner: { nodeId: string; peerId: string; self: boolean } | undefined
      for (const member of fleet.members()) if (owner === undefined || member.nodeId < owner.nodeId) owner = member
      return owner === undefined || owner.self ? null : owner.peerId
    },
    nodes: () => Math.max(1, fleet.members().length),
    lease: async (owner, request) => (await fleet.request(owner, PROTOCOLS.lease, request, leaseResponse, { timeoutMs: 2_000 })).granted,
    publishTokens: (usage) => {
      usageTopic.publish(usage).catch((error: unknown) => logger.debug({ err: error }, 'could not publish gateway key usage'))
    },
  })
  return {
    publishRateLimit(signal) {
      rateTopic.publish({ provider: signal.provider, key_id: signal.keyId, model: signal.model, until_ms: Math.ceil(signal.untilMs) }).catch((error: unknown) => logger.warn({ err: error }, 'could not publish a rate-limit signal'))
    },
    publishConfig(change) {
      configTopic.publish(change).catch((error: unknown) => logger.warn({ err: error }, 'could not publish a config change'))
    },
  }
}
