/**
 * Which provider serves a request, and which fallbacks follow it. `model` is either
 * `provider/model` (pinned) or a bare model: the first provider with a key naming the model,
 * else the first whose keys serve every model ("*").
 * Model names may contain slashes themselves (`meta-llama/Llama-3-8b`): a prefix counts as a
 * provider only when a provider of that name is configured.
 */
import { GatewayError } from '../errors.ts'
import { keyNamesModel, type ProviderRegistry, type ProviderRuntime } from './registry.ts'

/** One provider + model to try, with its own full retry budget. */
export interface Target {
  provider: ProviderRuntime
  model: string
}

/** The primary target followed by the request's fallbacks, in order. */
export function resolveTargets(registry: ProviderRegistry, model: string, fallbacks: readonly string[]): Target[] {
  const targets = [resolvePrimary(registry, model)]
  fallbacks.forEach((fallback, index) => {
    const slash = fallback.indexOf('/')
    const name = fallback.slice(0, slash)
    const provider = registry.get(name)
    if (provider === undefined) {
      throw new GatewayError('unknown_provider', `fallbacks[${index}] names provider "${name}", which is not configured. Configured providers: ${names(registry)}.`, { param: `fallbacks[${index}]` })
    }
    targets.push({ provider, model: fallback.slice(slash + 1) })
  })
  return targets
}

function resolvePrimary(registry: ProviderRegistry, model: string): Target {
  const slash = model.indexOf('/')
  if (slash > 0) {
    const provider = registry.get(model.slice(0, slash))
    if (provider !== undefined) return { provider, model: model.slice(slash + 1) }
  }
  // A provider that names the model beats one that serves everything ("*"); a bare model
  // with a slash never goes to a wildcard, so a mistyped provider prefix is not sent upstream.
  let wildcard: ProviderRuntime | undefined
  for (const provider of registry.list) {
    const keys = provider.keysFor(model)
    if (keys.some((key) => keyNamesModel(key, model))) return { provider, model }
    if (keys.length > 0) wildcard ??= provider
  }
  if (wildcard !== undefined && slash < 0) return { provider: wildcard, model }
  if (slash > 0) {
    throw new GatewayError('unknown_provider', `"${model.slice(0, slash)}" in model "${model}" is not a configured provider, and no provider serves a model of that name. Configured providers: ${names(registry)}.`, { param: 'model' })
  }
  throw new GatewayError('model_not_served', `No configured provider has a key for model "${model}". Name it as "provider/model", or add it to a key's "models". Configured providers: ${names(registry)}.`, { param: 'model' })
}

function names(registry: ProviderRegistry): string {
  return registry.list.map((provider) => provider.name).join(', ') || '(none)'
}
