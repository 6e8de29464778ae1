/**
 * This node's view of the active holds, indexed for the hot path: provider → key → {whole-key
 * hold, holds per model}, each with this node's own due time and check slot (not replicated).
 */
import { holdId, type HoldEntry } from './entry.ts'
import { nodeWaitMs } from './ladder.ts'

/** A check that never reports back (a cancelled request) frees its slot after this long. */
export const CHECK_SLOT_TIMEOUT_MS = 5 * 60 * 1000

/** An active hold as this node sees it. */
export interface HeldRoute {
  readonly entry: HoldEntry
  /** When this node's check is due (epoch ms): the shared wait start plus this node's jittered wait. */
  readonly dueAt: number
  /** When this node let its one check through, or null while the slot is free. */
  checkClaimedAt: number | null
}

/** The active holds of this node, with due times and check slots, kept in step with the hold set. */
export class HeldIndex {
  /** Provider -> key -> its whole-key hold and its holds per model. */
  private readonly providers = new Map<string, Map<string, { whole: HeldRoute | null; models: Map<string, HeldRoute> }>>()
  private readonly byId = new Map<string, HeldRoute>()

  constructor(private readonly random: () => number) {}

  /** Brings the index in line with a changed entry: a new version draws a new due time and frees the slot. */
  update(entry: HoldEntry): void {
    this.remove(entry)
    if (entry.state !== 'held') return
    const route: HeldRoute = { entry, dueAt: entry.waitStartedAt + nodeWaitMs(entry, this.random), checkClaimedAt: null }
    let keys = this.providers.get(entry.provider)
    if (!keys) this.providers.set(entry.provider, (keys = new Map()))
    let holds = keys.get(entry.keyId)
    if (!holds) keys.set(entry.keyId, (holds = { whole: null, models: new Map() }))
    if (entry.model === null) holds.whole = route
    else holds.models.set(entry.model, route)
    this.byId.set(holdId(entry), route)
  }

  private remove(entry: HoldEntry): void {
    const id = holdId(entry)
    if (!this.byId.delete(id)) return
    const keys = this.providers.get(entry.provider)
    const holds = keys?.get(entry.keyId)
    if (!keys || !holds) return
    if (entry.model === null) holds.whole = null
    else holds.models.delete(entry.model)
    if (holds.whole === null && holds.models.size === 0) keys.delete(entry.keyId)
    if (keys.size === 0) this.providers.delete(entry.provider)
  }

  /** The holds that keep `keyId` from serving `model`: its whole-key hold and its hold on that model. */
  covering(provider: string, keyId: string, model: string): HeldRoute[] {
    const holds = this.providers.get(provider)?.get(keyId)
    if (!holds) return []
    const modelHold = holds.models.get(model)
    if (holds.whole && modelHold) return [holds.whole, modelHold]
    if (holds.whole) return [holds.whole]
    return modelHold ? [modelHold] : []
  }

  /** True when `keyId` is held for `model` (a whole-key hold covers every model). */
  isHeld(provider: string, keyId: string, model: string): boolean {
    const holds = this.providers.get(provider)?.get(keyId)
    return holds !== undefined && (holds.whole !== null || holds.models.has(model))
  }

  /** True when every hold keeping `keyId` from `model` is due and has a free slot on this node. */
  checkable(provider: string, keyId: string, model: string, now: number): boolean {
    const routes = this.covering(provider, keyId, model)
    return routes.length > 0 && routes.every((route) => now >= route.dueAt && (route.checkClaimedAt === null || now - route.checkClaimedAt >= CHECK_SLOT_TIMEOUT_MS))
  }

  /** Takes this node's slot on every hold covering the route; false (and nothing taken) unless `checkable`. */
  claim(provider: string, keyId: string, model: string, now: number): boolean {
    if (!this.checkable(provider, keyId, model, now)) return false
    for (const route of this.covering(provider, keyId, model)) route.checkClaimedAt = now
    return true
  }

  /** The held keys of `provider` that this node may check for `model` now. */
  dueKeys(provider: string, model: string, now: number): string[] {
    return [...(this.providers.get(provider)?.keys() ?? [])].filter((keyId) => this.checkable(provider, keyId, model, now))
  }

  /** Every active hold, with this node's due time. */
  routes(): HeldRoute[] {
    return [...this.byId.values()]
  }
}
