import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { createWriteQueue, type ConfigStore, type StoredProvider } from '@switchboard/store'
import { createProviderDirectory } from './directory.ts'

const unreachable = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

describe('a provider write that landed', () => {
  it('answers as landed and serves the change here even when Postgres goes away before it is read back (never a 500)', async () => {
    let reads = 0
    const stored: StoredProvider = { name: 'groq', type: 'openai', keys: [{ id: 'g-1', name: 'g-1', value: 'gsk-value-aaaa', models: ['llama'], weight: 1 } as StoredProvider['keys'][number]], custom_provider_config: { base_provider_type: 'openai' }, network_config: { base_url: 'http://127.0.0.1:9' } as StoredProvider['network_config'], updated_at: new Date() }
    const store = {
      on: () => () => {},
      // The boot read answers; every read after the write finds Postgres gone.
      listProviders: async () => {
        if (reads++ > 0) throw unreachable()
        return []
      },
      createProvider: async () => stored,
    } as unknown as ConfigStore
    const queue = createWriteQueue()
    const directory = await createProviderDirectory({ store, queue, logger: pino({ level: 'silent' }), env: {} })
    try {
      const outcome = await directory.create({ name: 'groq', keys: [{ name: 'g-1', value: 'gsk-value-aaaa', models: ['llama'], weight: 1 }], custom_provider_config: { base_provider_type: 'openai' }, network_config: { base_url: 'http://127.0.0.1:9' } })
      expect(outcome.pending).toBe(false)
      expect(outcome.result.name).toBe('groq')
      expect(directory.get('groq')?.keys.map((key) => key.name)).toEqual(['g-1'])
      expect(directory.registry.get('groq')).toBeDefined()
      expect(reads).toBe(2)
    } finally {
      queue.close()
      await directory.close()
    }
  })
})
