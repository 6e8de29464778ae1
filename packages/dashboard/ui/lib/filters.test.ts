import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { chosen, cleared, facetEntries, toggled } from './filters.js'

describe('filters in the URL', () => {
  it('read a comma-separated param, none when it is missing or empty', () => {
    expect(chosen({ providers: 'openai,azure' }, 'providers')).toEqual(['openai', 'azure'])
    expect(chosen({}, 'providers')).toEqual([])
    expect(chosen({ providers: '' }, 'providers')).toEqual([])
  })

  it('drop the empty items of a hand-edited param (",openai,,")', () => {
    expect(chosen({ providers: ',openai,,' }, 'providers')).toEqual(['openai'])
    expect(chosen({ providers: ',' }, 'providers')).toEqual([])
  })

  it('toggle a value in and out, the param going when nothing is left', () => {
    expect(toggled({}, 'models', 'gpt-4o')).toBe('gpt-4o')
    expect(toggled({ models: 'gpt-4o' }, 'models', 'o3')).toBe('gpt-4o,o3')
    expect(toggled({ models: 'gpt-4o,o3' }, 'models', 'gpt-4o')).toBe('o3')
    expect(toggled({ models: 'gpt-4o' }, 'models', 'gpt-4o')).toBeNull()
  })

  it('toggling the same value twice gives back the chosen values', () => {
    const value = fc.stringMatching(/^[a-z0-9-]{1,8}$/)
    fc.assert(fc.property(fc.uniqueArray(value, { maxLength: 5 }), value, (values, extra) => {
      const params = { p: values.join(',') }
      const once = toggled(params, 'p', extra)
      const twice = toggled({ p: once ?? '' }, 'p', extra)
      expect(chosen({ p: twice ?? '' }, 'p').sort()).toEqual([...values].sort())
    }))
  })

  it('clear a list of params', () => {
    expect(cleared(['statuses', 'search'])).toEqual({ statuses: null, search: null })
    expect(cleared([])).toEqual({})
  })
})

describe('facetEntries', () => {
  it('puts the most counted first, keeping the API\'s order on ties, and the empty value as it is', () => {
    expect(facetEntries({ a: 1, b: 5, '': 2, c: 5 })).toEqual([['b', 5], ['c', 5], ['', 2], ['a', 1]])
  })

  it('has no entries for a missing or empty facet', () => {
    expect(facetEntries(undefined)).toEqual([])
    expect(facetEntries(null)).toEqual([])
    expect(facetEntries({})).toEqual([])
  })
})
