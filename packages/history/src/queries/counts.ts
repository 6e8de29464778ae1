/**
 * The request counts of a window, summed for the dashboard's figures: from the count rollups
 * (kept by a trigger, see the baseline migration: per node, the same aligned blocks as the snapshot rollups) for every whole
 * block inside the window, and from the per-minute counts for the rest. Sums add exactly, so
 * the answer is the one the counts alone give.
 */
import type pg from 'pg'
import { coverWindow, ROLLUP_SECONDS } from './timeline.ts'

/** The counted fields of `history_counts`. */
export const COUNT_FIELDS = ['served', 'failed', 'redirected', 'fallback_served', 'routing_picked', 'caller_named', 'kept_failing', 'checks'] as const

/** The sums of every counted field over [from, to] (both inclusive), 0 where nothing was counted. */
export async function sumCounts(pool: pg.Pool, window: { from: number; to: number }): Promise<Record<(typeof COUNT_FIELDS)[number], number>> {
  // Every block size divides the largest, so any block may be used; the window is the only bound.
  const cover = coverWindow(window.from, window.to, Math.max(...ROLLUP_SECONDS))
  const params: unknown[] = []
  const add = (value: unknown) => `$${params.push(value)}`
  const blocks = cover.blocks.map((block) => `(span_seconds = ${add(block.seconds)} AND bucket_at >= ${add(new Date(block.fromMs))} AND bucket_at < ${add(new Date(block.toMs))})`)
  const ranges = cover.snapshots.map((range) => `(at >= ${add(new Date(range.fromMs))} AND at ${range.closed ? '<=' : '<'} ${add(new Date(range.toMs))})`)
  const fields = COUNT_FIELDS.join(', ')
  const result = await pool.query<Record<string, string | null>>(
    `SELECT ${COUNT_FIELDS.map((field) => `sum(${field}) AS ${field}`).join(', ')} FROM (
       SELECT ${fields} FROM history_count_rollups WHERE ${blocks.join(' OR ') || 'false'}
       UNION ALL
       SELECT ${fields} FROM history_counts WHERE ${ranges.join(' OR ') || 'false'}
     ) AS parts`,
    params,
  )
  const row = result.rows[0] ?? {}
  return Object.fromEntries(COUNT_FIELDS.map((field) => [field, Number(row[field] ?? 0)])) as Record<(typeof COUNT_FIELDS)[number], number>
}
