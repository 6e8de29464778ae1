/** A request's model and fallbacks read as directions (provider + model), with errors that name what to fix; routing plans the rest. */
import { keyNamesModel, type Direction } from '@switchboard/routing'
import { GatewayError } from '../errors.ts'
import type { ProviderRegistry } from '../inference/registry.ts'

/** `provider/model` pins a configured provider; anything else is a bare model (which may contain slashes). */
export function parseModel(registry: ProviderRegistry, model: string): { pinned?: string; model: string } {
  const slash = model.indexOf('/')
  if (slash > 0) {
    const provider = model.slice(0, slash)
    if (registry.get(provider)) return { pinned: provider, model: model.slice(slash + 1) }
    // A bare model with a slash must be named by some key: a mistyped provider prefix is not sent upstream.
    const named = registry.list.some((runtime) => runtime.keysFor(model).some((key) => keyNamesModel(key, model)))
    if (!named) throw new GatewayError('unknown_provider', `"${provider}" in model "${model}" is not a configured provider, and no key names a model of that name. Configured providers: ${names(registry)}.`, { param: 'model' })
  }
  return { model }
}

/** No directions: a request without fallbacks. */
export const NO_DIRECTIONS: readonly Direction[] = Object.freeze([])

/** A request's `fallbacks[index]` ("provider/model", shape checked by validation) as a direction. */
export function parseFallback(registry: ProviderRegistry, fallback: string, index: number): Direction {
  const slash = fallback.indexOf('/')
  const provider = fallback.slice(0, slash)
  if (!registry.get(provider)) {
    throw new GatewayError('unknown_provider', `fallbacks[${index}] names provider "${provider}", which is not configured. Configured providers: ${names(registry)}.`, { param: `fallbacks[${index}]` })
  }
  return { provider, model: fallback.slice(slash + 1) }
}

export function names(registry: ProviderRegistry): string {
  return registry.list.map((provider) => provider.name).join(', ') || '(none)'
}
