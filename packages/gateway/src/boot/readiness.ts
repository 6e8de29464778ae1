/**
 * Is this node ready to serve inference (issue 37, item 5)? Only once it has loaded its gateway
 * keys (Postgres, a peer or config.json) and has a provider: until then /health says `starting`
 * and inference answers 503 `gateway_starting`, never as if nobody had a key.
 */
import { GatewayError } from '../errors.ts'

/** Where the node's gateway keys came from; a higher one replaces a lower one (access/key-loading.ts). */
export type GatewayKeysFrom = 'postgres' | 'peer' | 'config'

/** What readiness is decided from. */
export interface ReadinessFacts {
  /** False while the node is still wiring itself up (the early listener answers). */
  booted: boolean
  /** Where the gateway keys came from; null while none were loaded. */
  gatewayKeys: GatewayKeysFrom | null
  providers: number
}

/** The decision: ready or not, why not (`starting`), and what a ready node lacks (`degraded`). */
export type Readiness = ReturnType<typeof assessReadiness>

/** Seconds a caller is told to wait before retrying a node that is starting. */
export const STARTING_RETRY_AFTER_SECONDS = 5

/** Decides readiness from the facts. */
export function assessReadiness(facts: ReadinessFacts) {
  const starting: string[] = []
  const degraded: string[] = []
  if (!facts.booted) starting.push('starting: reaching Postgres and the fleet')
  if (facts.gatewayKeys === null) {
    starting.push('gateway keys not loaded yet: Postgres has not answered and no peer has shared them (config.json has none); inference answers 503 until one does')
  } else if (facts.gatewayKeys === 'config') {
    degraded.push('gateway keys from config.json only: keys created through the API are not known here until Postgres answers or a peer shares them')
  }
  // While booting, none were read yet: that is the booting reason, not a missing provider.
  if (facts.booted && facts.providers === 0) starting.push('no providers yet: add one to config.json or with POST /api/providers')
  return { ready: starting.length === 0, starting, degraded }
}

/** The 503 an inference call gets while the node is starting, naming why. */
export function startingError(readiness: Pick<Readiness, 'starting'>): GatewayError {
  const why = readiness.starting.length > 0 ? readiness.starting.join('; ') : 'starting'
  return new GatewayError('gateway_starting', `This gateway node is starting and cannot serve yet (${why}). Retry in ${STARTING_RETRY_AFTER_SECONDS} s, or send to another node.`, { retryAfterSeconds: STARTING_RETRY_AFTER_SECONDS })
}

/** The facts of one node, as they change, and the cached decision the request path reads. */
export class ReadinessState {
  private facts: ReadinessFacts = { booted: false, gatewayKeys: null, providers: 0 }
  private decided: Readiness = assessReadiness(this.facts)

  /** True once the node may serve inference: one property read on the request path. */
  get ready(): boolean {
    return this.decided.ready
  }

  /** Updates some facts and decides again. */
  update(facts: Partial<ReadinessFacts>): void {
    this.facts = { ...this.facts, ...facts }
    this.decided = assessReadiness(this.facts)
  }

  get(): Readiness {
    return this.decided
  }

  current(): Readonly<ReadinessFacts> {
    return this.facts
  }
}
