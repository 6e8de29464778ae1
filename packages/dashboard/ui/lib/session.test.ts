import { describe, expect, it } from 'vitest'
import { can } from './session.js'

describe('can', () => {
  it('lets the role decide without per-area permissions: Update implies View', () => {
    expect(can({ role: 'update' }, 'providers')).toBe(true)
    expect(can({ role: 'view' }, 'providers')).toBe(false)
    expect(can({ role: 'view' }, 'providers', 'view')).toBe(true)
    expect(can({ role: null }, 'providers', 'view')).toBe(false)
  })

  it('lets per-area permissions decide when there are any, even an empty list', () => {
    const session = { role: 'update' as const, permissions: ['providers.update', 'logs.view'] }
    expect(can(session, 'providers')).toBe(true)
    expect(can(session, 'providers', 'view')).toBe(true)
    expect(can(session, 'logs')).toBe(false)
    expect(can(session, 'logs', 'view')).toBe(true)
    expect(can(session, 'settings', 'view')).toBe(false)
    expect(can({ role: 'update', permissions: [] }, 'providers')).toBe(false)
  })
})
