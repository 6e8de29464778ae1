import { ensureDatabase, createPool } from '@switchboard/store'
const database = await ensureDatabase({ dataDir: '/work/main/bench/results/request-log-query/postgres', port: 18421 })
const url = new URL(database.url); url.pathname = '/' + process.argv[2]
const pool = createPool({ url: url.toString() })
const { rows: m } = await pool.query('select max(at) as max, min(at) as min from request_log_minutes')
const to = new Date(m[0].max.getTime() + 59_000 + 123), from = new Date(to.getTime() - 86_400_000)
const A = new Date(Math.ceil(from.getTime()/60000)*60000), B = new Date(Math.floor(to.getTime()/60000)*60000)
for (const [label, sql, values] of [
  ['minutes', `EXPLAIN ANALYZE SELECT served_provider, model, status, failure_class, node_id, picked_by, moved_off, is_check, added_fallback_served, key_ids, sum(requests) FROM request_log_minutes WHERE at >= $1 AND at < $2 GROUP BY 1,2,3,4,5,6,7,8,9,10`, [A, B]],
  ['edges OR', `EXPLAIN ANALYZE SELECT served_provider, count(*) FROM request_log WHERE (at >= $1 AND at < $2) OR (at >= $3 AND at <= $4) GROUP BY 1`, [from, A, B, to]],
  ['edge one', `EXPLAIN ANALYZE SELECT served_provider, count(*) FROM request_log WHERE (at >= $1 AND at <= $2) GROUP BY 1`, [B, to]],
  ['page 10s', `EXPLAIN ANALYZE SELECT id FROM request_log WHERE at >= $1 AND at <= $2 ORDER BY at DESC, id DESC LIMIT 50`, [new Date(to.getTime() - 10000), to]],
] as const) {
  const t = performance.now()
  const r = await pool.query(sql, values as unknown[])
  console.log('==', label, Math.round(performance.now() - t), 'ms')
  console.log(r.rows.map((row: any) => row['QUERY PLAN']).join('\n').slice(0, 2500))
}
await pool.end(); await database.release()
