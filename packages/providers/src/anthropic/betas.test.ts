import { describe, expect, it } from 'vitest'
import { RefusedBetas, refusedBetaFlags } from './betas.ts'

const VERTEX = 'Unexpected value(s) `prompt-caching-scope-2026-01-05`, `effort-2025-11-24` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.'

describe('anthropic-beta flags a target refuses (issue 37)', () => {
  it('reads the flags Anthropic\'s (and Vertex\'s) 400 names, and nothing from any other message', () => {
    expect(refusedBetaFlags(VERTEX)).toEqual(['prompt-caching-scope-2026-01-05', 'effort-2025-11-24'])
    expect(refusedBetaFlags('temperature: Input should be less than or equal to 1')).toEqual([])
  })

  it('sends the header unchanged until a refusal names flags it carried; then leaves only those out, never adds one', () => {
    const betas = new RefusedBetas()
    const header = 'claude-code-20250219,effort-2025-11-24, prompt-caching-scope-2026-01-05,context-1m-2025-08-07'
    expect(betas.filter(header)).toEqual({ header, leftOut: [] })
    expect(betas.learn('some other 400', header)).toBe(false)
    expect(betas.learn(VERTEX, 'claude-code-20250219')).toBe(false)
    expect(betas.learn(VERTEX, header)).toBe(true)
    expect(betas.learn(VERTEX, header)).toBe(false)
    expect(betas.filter(header)).toEqual({ header: 'claude-code-20250219,context-1m-2025-08-07', leftOut: ['effort-2025-11-24', 'prompt-caching-scope-2026-01-05'] })
    expect(betas.filter('effort-2025-11-24')).toEqual({ header: undefined, leftOut: ['effort-2025-11-24'] })
    expect(betas.filter('context-1m-2025-08-07')).toEqual({ header: 'context-1m-2025-08-07', leftOut: [] })
    expect(betas.filter(undefined)).toEqual({ header: undefined, leftOut: [] })
  })
})
