import { describe, expect, it } from 'vitest'
import { Hono } from 'hono'
import type { HttpBindings } from '@hono/node-server'
import { GatewayError } from '../errors.ts'
import { adminAuth, isLoopback, parseAdminTokens } from './auth.ts'

function app(tokens: Parameters<typeof adminAuth>[0]) {
  const hono = new Hono<{ Bindings: HttpBindings }>()
  hono.onError((error, context) => context.json({ code: (error as GatewayError).code }, (error as GatewayError).status as 401))
  hono.use('/api/*', adminAuth(tokens))
  hono.all('/api/thing', (context) => context.json({ ok: true }))
  return (method: string, remoteAddress: string, authorization?: string) =>
    hono.request('/api/thing', { method, headers: authorization ? { authorization } : {} }, { incoming: { socket: { remoteAddress } } } as unknown as HttpBindings)
}

describe('admin auth', () => {
  it('without tokens, answers loopback clients only', async () => {
    const request = app([])
    expect((await request('PUT', '127.0.0.1')).status).toBe(200)
    expect((await request('GET', '::ffff:127.0.0.1')).status).toBe(200)
    expect((await request('GET', '::1')).status).toBe(200)
    const remote = await request('GET', '10.1.2.3')
    expect(remote.status).toBe(403)
    expect(await remote.json()).toEqual({ code: 'admin_forbidden' })
  })

  it('with tokens, checks them from any address, and a view token only reads', async () => {
    const request = app([
      { token: 'u'.repeat(20), role: 'update' },
      { token: 'v'.repeat(20), role: 'view' },
    ])
    expect((await request('GET', '10.1.2.3')).status).toBe(401)
    expect((await request('GET', '127.0.0.1', `Bearer ${'x'.repeat(20)}`)).status).toBe(401)
    expect((await request('GET', '10.1.2.3', `Bearer ${'v'.repeat(20)}`)).status).toBe(200)
    expect((await request('DELETE', '10.1.2.3', `Bearer ${'v'.repeat(20)}`)).status).toBe(403)
    expect((await request('DELETE', '10.1.2.3', `Bearer ${'u'.repeat(20)}`)).status).toBe(200)
  })

  it('parses SWITCHBOARD_ADMIN_TOKENS and rejects bad entries without echoing them', () => {
    expect(parseAdminTokens(`${'a'.repeat(16)}:update, ${'b'.repeat(16)}:view`)).toEqual([
      { token: 'a'.repeat(16), role: 'update' },
      { token: 'b'.repeat(16), role: 'view' },
    ])
    expect(parseAdminTokens(undefined)).toEqual([])
    expect(() => parseAdminTokens('secret-secret-secret:admin')).toThrow(/entry 1 must look like/)
    expect(() => parseAdminTokens('short:view')).toThrow(/at least 16/)
    try {
      parseAdminTokens('secret-secret-secret:admin')
    } catch (error) {
      expect((error as Error).message).not.toContain('secret')
    }
  })

  it('knows loopback addresses', () => {
    expect([isLoopback('127.0.0.1'), isLoopback('127.9.9.9'), isLoopback('::1'), isLoopback('::ffff:127.0.0.1'), isLoopback('10.0.0.1'), isLoopback(undefined)]).toEqual([true, true, true, true, false, false])
  })
})
