import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../store/test/database.ts'
import { COPY_HEADER_BYTES, copyRows } from './copy.ts'

/** Text-format rows with the room for CopyData's header in front, as copyRows takes them. */
const rows = (...values: number[]) => Buffer.concat([Buffer.alloc(COPY_HEADER_BYTES), Buffer.from(values.map((value) => `${value}\n`).join(''))])

describe('COPY FROM STDIN with statements around it', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
    await database.pool.query('CREATE TABLE copied (x integer NOT NULL); CREATE TABLE beside (y integer NOT NULL)')
  })
  afterAll(async () => {
    await database.drop()
  })

  const count = async (table: string) => Number((await database.pool.query<{ count: string }>(`SELECT count(*) FROM ${table}`)).rows[0]?.count)

  it('runs the statements before and after the rows in one message, as one transaction', async () => {
    await copyRows(database.pool, 'copied', ['x'], rows(1, 2, 3), { before: 'INSERT INTO beside VALUES (1)', after: 'INSERT INTO beside VALUES (2); INSERT INTO beside VALUES (3)' })
    expect(await count('copied')).toBe(3)
    expect(await count('beside')).toBe(3)
  })

  it('keeps none of it when a statement after the rows fails, and none when one before does', async () => {
    await expect(copyRows(database.pool, 'copied', ['x'], rows(4, 5), { before: 'INSERT INTO beside VALUES (4)', after: 'INSERT INTO beside VALUES (NULL)' })).rejects.toThrow(/null value/)
    await expect(copyRows(database.pool, 'copied', ['x'], rows(6), { before: 'INSERT INTO beside VALUES (NULL)', after: 'INSERT INTO beside VALUES (7)' })).rejects.toThrow(/null value/)
    // A bad row: the statements around it go too.
    await expect(copyRows(database.pool, 'copied', ['x'], Buffer.concat([rows(8), Buffer.from('not a number\n')]), { before: 'INSERT INTO beside VALUES (8)' })).rejects.toThrow(/integer/)
    expect(await count('copied')).toBe(3)
    expect(await count('beside')).toBe(3)
    // The connection is fine afterwards: the next batch goes in.
    await copyRows(database.pool, 'copied', ['x'], rows(9), { after: 'INSERT INTO beside VALUES (9)' })
    expect(await count('copied')).toBe(4)
    expect(await count('beside')).toBe(4)
  })
})
