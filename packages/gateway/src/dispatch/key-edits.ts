/**
 * Which keys a re-read of the providers changed: a key edited on a peer arrives as a re-read, not
 * as a store event, and a refusal sent before the edit must not hold it (issue 11, f).
 */
import type { ProviderKey } from '@switchboard/providers'
import type { AdaptiveBalancer, HoldEntry, Holds, RateLimitBackoffs } from '@switchboard/routing'
import type { ConfigStoreEvent } from '@switchboard/store'
import type { ProviderRegistry } from '../inference/registry.ts'
import type { Dispatcher } from './dispatcher.ts'

/** A key of a provider, by ids. */
export type EditedKey = Pick<HoldEntry, 'provider' | 'keyId'>

/** What makes a key's answers the key's: any change of it is an edit (reference: "Releasing held keys"). */
function signature(key: ProviderKey): string {
  return JSON.stringify([key.value, key.models, key.weight, key.aliases ?? null, key.azure_key_config ?? null, key.bedrock_key_config ?? null, key.vertex_key_config ?? null])
}

/** The keys of every provider, by provider and id, with their signatures. */
export function keySignatures(registry: ProviderRegistry): Map<string, { key: EditedKey; signature: string }> {
  const signatures = new Map<string, { key: EditedKey; signature: string }>()
  for (const runtime of registry.list) {
    for (const key of runtime.config.keys) signatures.set(`${runtime.name}\u0000${key.id}`, { key: { provider: runtime.name, keyId: key.id }, signature: signature(key) })
  }
  return signatures
}

/** Keys present before and after whose configuration changed (new and removed keys are not edits). */
export function editedKeys(before: Map<string, { key: EditedKey; signature: string }>, after: ProviderRegistry): EditedKey[] {
  const edited: EditedKey[] = []
  for (const [id, now] of keySignatures(after)) {
    const previous = before.get(id)
    if (previous !== undefined && previous.signature !== now.signature) edited.push(now.key)
  }
  return edited
}

/**
 * What a config edit does to routing (reference: "Releasing held keys"), wherever it came from: a
 * key edited releases its holds and backoffs; a key or provider deleted takes its holds away.
 */
export function routingEdits(components: { holds: Holds; backoffs: RateLimitBackoffs; balancer: Pick<AdaptiveBalancer, 'holdsChanged'>; dispatcher: Pick<Dispatcher, 'released' | 'settle'>; now: () => number }) {
  const { holds, backoffs, balancer, dispatcher, now } = components
  const keyEdited = (provider: string, keyId: string) => {
    const changed = holds.keyEdited(provider, keyId, now())
    if (backoffs.forgetKey(provider, keyId)) balancer.holdsChanged()
    dispatcher.released(changed)
  }
  return {
    keyEdited,
    /** A store event of this node (or of config.json at its boot). */
    apply(change: ConfigStoreEvent): void {
      if (change.type === 'key:changed' && !change.detail.created) keyEdited(change.detail.provider, change.detail.id)
      else if (change.type === 'key:deleted') dispatcher.settle(holds.keyDeleted(change.detail.provider, change.detail.id, now()))
      else if (change.type === 'provider:deleted') dispatcher.settle(holds.providerDeleted(change.detail.provider, now()))
    },
  }
}
