import { describe, expect, it } from 'vitest'
import { GatewayError } from '../errors.ts'
import { jsonDepth, MAX_JSON_DEPTH, parseJsonBody } from './body.ts'

describe('parseJsonBody', () => {
  it('refuses a body nested past the limit with a 400, before parsing it', () => {
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`
    expect(() => parseJsonBody(deep)).toThrow(GatewayError)
    expect(() => parseJsonBody(deep)).toThrow(/more than 64 levels/)
    const ok = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`
    expect(parseJsonBody(ok)).toBeInstanceOf(Array)
  })

  it('counts brackets outside strings only, escapes included', () => {
    expect(jsonDepth('{"a":"[[[[{{{{"}', 10)).toBe(1)
    expect(jsonDepth('{"a":"\\\\"}', 10)).toBe(1)
    expect(jsonDepth('{"a":"\\"[[[["}', 10)).toBe(1)
    expect(jsonDepth('{"a":[{"b":[1]}]}', 10)).toBe(4)
    expect(jsonDepth('{"a":"unterminated [[[', 10)).toBe(1)
  })

  it('answers invalid JSON with invalid_json', () => {
    try {
      parseJsonBody('{"model": ')
      expect.unreachable()
    } catch (error) {
      expect((error as GatewayError).code).toBe('invalid_json')
      expect((error as GatewayError).status).toBe(400)
    }
  })
})
