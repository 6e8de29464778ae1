/** config.json's reference (docs/configuration.md, "Every field of config.json") names every field the schema accepts. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { configSchema } from './schema.ts'

interface SchemaNode {
  _zod: { def: { type: string; shape?: Record<string, SchemaNode>; innerType?: SchemaNode; element?: SchemaNode; valueType?: SchemaNode; in?: SchemaNode; options?: SchemaNode[] } }
}

/** Every property name of the schema, at any depth (wrappers, arrays, records and unions looked through). */
function fieldNames(node: SchemaNode, into = new Set<string>()): Set<string> {
  const def = node._zod.def
  if (def.shape !== undefined) {
    for (const [name, child] of Object.entries(def.shape)) {
      into.add(name)
      fieldNames(child, into)
    }
  }
  for (const child of [def.innerType, def.element, def.valueType, def.in, ...(def.options ?? [])]) if (child !== undefined) fieldNames(child, into)
  return into
}

describe('config.json reference', () => {
  it('names every field of the schema in docs/configuration.md', () => {
    const page = readFileSync(new URL('../../../../docs/configuration.md', import.meta.url), 'utf8')
    const index = page.slice(page.indexOf('## Every field of config.json'))
    const named = new Set([...index.matchAll(/`([^`]+)`/g)].flatMap((match) => match[1]!.split(/[^A-Za-z0-9_$]+/)))
    const fields = [...fieldNames(configSchema as unknown as SchemaNode)]
    expect(fields.length).toBeGreaterThan(40)
    expect(fields.filter((field) => !named.has(field))).toEqual([])
  })
})
