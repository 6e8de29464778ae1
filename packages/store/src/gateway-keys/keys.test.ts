import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '../index.ts'
import { createTestDatabase, type TestDatabase } from '../../test/database.ts'
import { createGatewayKey, GatewayKeyConflict, importGatewayKeys, listGatewayKeys, revokeGatewayKey, type NewGatewayKey } from './keys.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
  await migrate(database.pool)
})
afterAll(async () => {
  await database?.drop()
})

const key = (name: string, secret: string, limits: Partial<NewGatewayKey> = {}): NewGatewayKey => ({ name, secretHash: `hash-${secret}`, redacted: `sk-...${secret}`, ...limits })

describe('gateway keys', () => {
  it('creates keys under their field names, refuses a taken name, and revokes', async () => {
    const created = await createGatewayKey(database.pool, key('api-one', 'a1', { providers: ['openai'], requestsPerMinute: 5 }))
    expect(created).toMatchObject({ name: 'api-one', secretHash: 'hash-a1', redacted: 'sk-...a1', providers: ['openai'], models: null, requestsPerMinute: 5, tokensPerMinute: null, origin: 'api', revokedAt: null })
    expect(created.id).toMatch(/^gk_/)
    expect(created.createdAt).toBeInstanceOf(Date)
    await expect(createGatewayKey(database.pool, key('api-one', 'a2'))).rejects.toBeInstanceOf(GatewayKeyConflict)
    expect(await listGatewayKeys(database.pool)).toEqual([created])
    expect(await revokeGatewayKey(database.pool, created.id)).toBe(true)
    expect(await revokeGatewayKey(database.pool, created.id)).toBe(false)
    expect(await listGatewayKeys(database.pool)).toEqual([])
    expect((await listGatewayKeys(database.pool, { includeRevoked: true }))[0]).toMatchObject({ id: created.id, revokedAt: expect.any(Date) })
  })

  it('imports config.json: adds, updates a name, keeps revoked secrets revoked, moves a secret to its new name', async () => {
    expect(await importGatewayKeys(database.pool, [])).toEqual({ added: 0, updated: 0, skippedRevoked: 0 })
    expect(await importGatewayKeys(database.pool, [key('ci', 'c1'), key('batch', 'b1')])).toEqual({ added: 2, updated: 0, skippedRevoked: 0 })
    // Same name, new secret and limits: the active key of that name takes them.
    expect(await importGatewayKeys(database.pool, [key('ci', 'c2', { tokensPerMinute: 100 })])).toEqual({ added: 0, updated: 1, skippedRevoked: 0 })
    const ci = (await listGatewayKeys(database.pool)).find((stored) => stored.name === 'ci')!
    expect(ci).toMatchObject({ secretHash: 'hash-c2', tokensPerMinute: 100, origin: 'config' })
    // A revoked secret stays revoked, under whatever name.
    await revokeGatewayKey(database.pool, ci.id)
    expect(await importGatewayKeys(database.pool, [key('ci', 'c2'), key('other', 'c2')])).toEqual({ added: 0, updated: 0, skippedRevoked: 2 })
    // A secret under a new name moves there; one another active name holds while this name has its own is left alone.
    expect(await importGatewayKeys(database.pool, [key('batch-renamed', 'b1')])).toEqual({ added: 0, updated: 1, skippedRevoked: 0 })
    await importGatewayKeys(database.pool, [key('third', 't1')])
    expect(await importGatewayKeys(database.pool, [key('third', 'b1')])).toEqual({ added: 0, updated: 0, skippedRevoked: 1 })
    const active = (await listGatewayKeys(database.pool)).map((stored) => [stored.name, stored.secretHash])
    expect(active).toEqual([['batch-renamed', 'hash-b1'], ['third', 'hash-t1']])
  })
})
