/**
 * Entity keys of history (design.md, "History, incidents, request log"):
 * `route:provider:model:key_id`, `direction:provider:model`, `key:provider:key_id`.
 */

/** Where an incident happened: a key on a model, a provider and model, or a key across all models. */
export type Scope = 'route' | 'direction' | 'key'

/** The entity key of a route. */
export const routeEntity = (provider: string, model: string, keyId: string) => `route:${provider}:${model}:${keyId}`
/** The entity key of a direction. */
export const directionEntity = (provider: string, model: string) => `direction:${provider}:${model}`
/** The entity key of a whole key. */
export const keyEntity = (provider: string, keyId: string) => `key:${provider}:${keyId}`

/** The entity a hold covers: its route, or the whole key when the model is null. */
export const holdEntity = (provider: string, keyId: string, model: string | null) => (model === null ? keyEntity(provider, keyId) : routeEntity(provider, model, keyId))

/** The scope of an entity key. */
export function scopeOf(entity: string): Scope {
  return entity.startsWith('route:') ? 'route' : entity.startsWith('direction:') ? 'direction' : 'key'
}
