import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { ByteSink, RowArena } from './arena.ts'

/** An arena of text rows: `add` encodes one as UTF-8, `text` reads one back. */
function textArena(slabBytes: number) {
  const arena = new RowArena(new ByteSink(), slabBytes)
  const utf8 = (sink: ByteSink, text: string) => sink.utf8(text)
  return { arena, add: (text: string) => arena.encode(utf8, text), text: (slot: number) => arena.concat([slot]).toString('utf8') }
}

describe('row arena', () => {
  it('gives back each row as its UTF-8 bytes, runs of rows copied in the order asked', () => {
    const { arena, add, text } = textArena(64)
    const texts = ['a\tb\n', 'é€😀\n', 'x'.repeat(40) + '\n', 'y'.repeat(100) + '\n', 'z\n']
    const slots = texts.map(add)
    expect(slots.map(text)).toEqual(texts)
    expect(arena.concat(slots).toString('utf8')).toBe(texts.join(''))
    expect(arena.concat([slots[3] as number, slots[0] as number]).toString('utf8')).toBe(`${texts[3]}${texts[0]}`)
    const withRoom = arena.concat(slots, 5)
    expect(withRoom.length).toBe(5 + Buffer.byteLength(texts.join('')))
    expect(withRoom.subarray(5).toString('utf8')).toBe(texts.join(''))
    expect(arena.size).toEqual({ rows: 5, bytes: Buffer.byteLength(texts.join('')) })
  })

  it('reuses the slots and slabs it is given back', () => {
    const { arena, add, text } = textArena(32)
    const held: number[] = []
    for (let round = 0; round < 50; round++) {
      held.push(add(`row ${round}\n`))
      if (held.length > 5) arena.release(held.shift() as number)
    }
    expect(held.map(text)).toEqual(['row 45\n', 'row 46\n', 'row 47\n', 'row 48\n', 'row 49\n'])
    expect(Math.max(...held)).toBeLessThan(8)
    for (const slot of held) arena.release(slot)
    expect(arena.size).toEqual({ rows: 0, bytes: 0 })
    // releasing twice is harmless
    arena.release(held[0] as number)
    expect(arena.size).toEqual({ rows: 0, bytes: 0 })
  })

  it('keeps every live row intact whatever order rows are added and released in', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 90 }).map((text) => ({ add: text })), fc.nat(20).map((pick) => ({ release: pick }))), { maxLength: 200 }),
        fc.integer({ min: 16, max: 256 }),
        (steps, slabBytes) => {
          const { arena, add } = textArena(slabBytes)
          const live = new Map<number, string>()
          for (const step of steps) {
            if ('add' in step) {
              const slot = add(step.add)
              expect(live.has(slot)).toBe(false)
              live.set(slot, step.add)
            } else if (live.size > 0) {
              const slot = [...live.keys()][step.release % live.size] as number
              arena.release(slot)
              live.delete(slot)
            }
          }
          const slots = [...live.keys()]
          expect(arena.concat(slots).toString('utf8')).toBe(Buffer.from(slots.map((slot) => live.get(slot)).join(''), 'utf8').toString('utf8'))
          expect(arena.size.rows).toBe(live.size)
        },
      ),
      { numRuns: 200 },
    )
  })
})
