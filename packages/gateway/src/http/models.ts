/**
 * GET /v1/models: the models the configured keys name (and their aliases), in OpenAI's list
 * shape or Anthropic's when `anthropic-version` is sent. A model whose every route is failed or
 * held stays listed with `available: false`.
 */
import { newRequestId } from '@switchboard/history'
import { Hono } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import type { AdaptiveBalancer } from '@switchboard/routing'
import type { ProviderRegistry } from '../inference/registry.ts'

/** What the models list reads. */
export interface ModelsComponents extends Pick<AdaptiveBalancer, 'isRouteOffered'> {
  registry(): ProviderRegistry
}

/** One model as the fleet serves it. */
export interface ServedModel {
  id: string
  /** Providers with a key naming the model, in config order. */
  providers: string[]
  /** Those of them with a route neither failed nor held. */
  availableProviders: string[]
}

/** The models of the configured keys, in config order, with which providers can serve each now. */
export function listModels(components: ModelsComponents): ServedModel[] {
  const byId = new Map<string, ServedModel>()
  for (const runtime of components.registry().list) {
    for (const key of runtime.config.keys) {
      const names = key.models.filter((model) => model !== '*').concat(Object.keys(key.aliases ?? {}))
      for (const model of names) {
        let entry = byId.get(model)
        if (entry === undefined) byId.set(model, (entry = { id: model, providers: [], availableProviders: [] }))
        if (!entry.providers.includes(runtime.name)) entry.providers.push(runtime.name)
        if (!entry.availableProviders.includes(runtime.name) && components.isRouteOffered({ provider: runtime.name, model, keyId: key.id })) entry.availableProviders.push(runtime.name)
      }
    }
  }
  return [...byId.values()]
}

/** The route, mounted under /v1. */
export function modelsApi(components: ModelsComponents): Hono<{ Bindings: HttpBindings }> {
  const api = new Hono<{ Bindings: HttpBindings }>()
  api.get('/models', (context) => {
    context.header('x-request-id', newRequestId(Date.now()))
    const anthropic = context.req.header('anthropic-version') !== undefined
    const data = listModels(components).map((model) => ({
      ...(anthropic ? { type: 'model', id: model.id, display_name: model.id, created_at: '1970-01-01T00:00:00Z' } : { id: model.id, object: 'model', created: 0, owned_by: model.providers[0] ?? 'switchboard' }),
      available: model.availableProviders.length > 0, providers: model.providers, available_providers: model.availableProviders,
    }))
    // Anthropic's list: newest first there; ours keeps config order. One page holds them all.
    if (anthropic) return context.json({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null })
    return context.json({ object: 'list', data })
  })
  return api
}
