import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { COPY_HEADER_BYTES, copyRows } from './copy.ts'

/** Text-format rows with the room for CopyData's header in front, as copyRows takes them. */
const rows = (...values: number[]) => Buffer.concat([Buffer.alloc(COPY_HEADER_BYTES), Buffer.from(values.map((value) => `${value}\n`).join(''))])

describe('COPY FROM STDIN', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await database.pool.query('CREATE TABLE copied (x integer NOT NULL)')
  })
  afterAll(async () => {
    await database.drop()
  })

  const count = async () => Number((await database.pool.query<{ count: string }>('SELECT count(*) FROM copied')).rows[0]?.count)

  it('writes the rows in one statement, none of them when one is bad, and the connection still serves the next', async () => {
    await copyRows(database.pool, 'copied', ['x'], rows(1, 2, 3))
    expect(await count()).toBe(3)
    await expect(copyRows(database.pool, 'copied', ['x'], Buffer.concat([rows(4), Buffer.from('not a number\n')]))).rejects.toThrow(/integer/)
    expect(await count()).toBe(3)
    await copyRows(database.pool, 'copied', ['x'], rows(9))
    expect(await count()).toBe(4)
  })

  it('sends the rows with the statement: a statement the server refuses drops them, and the connection serves the next', async () => {
    await expect(copyRows(database.pool, 'not_there', ['x'], rows(5))).rejects.toThrow(/not_there/)
    await expect(copyRows(database.pool, 'copied', ['nope'], rows(6))).rejects.toThrow(/nope/)
    // Every pooled connection, each after a refusal, still serves.
    await Promise.all([1, 2, 3].map((value) => copyRows(database.pool, 'copied', ['x'], rows(value))))
    expect(await count()).toBe(7)
    expect(Number((await database.pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one)).toBe(1)
  })
})
