/**
 * The request log while Postgres goes away (issue 15): Switchboard with the request log on
 * under load at 50 connections, measured in two windows: Postgres up, then Postgres stopped
 * (its postmaster sent SIGINT, a fast shutdown, right before the second window). Requests
 * must be unaffected; the log's buffer fills, and the oldest rows are dropped and counted.
 *
 *   node --import tsx bench/recording/request-log-outage.mjs [--duration 8] [--connections 50] [--no-readme]
 *
 * The embedded PostgreSQL it stops is the bench's own (bench/.switchboard/postgres, started by
 * the Switchboard this run starts); the next Switchboard start brings it back.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { checkOneRequest, measure } from '../lib/load.mjs';
import { killAllNow, stopAll, stopService } from '../lib/processes.mjs';
import { replaceSection, runFacts } from '../lib/report.mjs';
import { metricValue, startSimulator, targets } from '../lib/targets.mjs';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const postmasterPidFile = join(benchDir, '.switchboard', 'postgres', 'postmaster.pid');

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
    'no-readme': { type: 'boolean', default: false },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
if (!(duration >= 1 && duration <= 60) || !(connections >= 1 && connections <= 500)) throw new Error('--duration 1..60, --connections 1..500');

async function counters(origin) {
  const text = await (await request(`${origin}/metrics`)).body.text();
  return {
    written: metricValue(text, 'switchboard_request_log_rows_written_total'),
    dropped: metricValue(text, 'switchboard_request_log_rows_dropped_total'),
    buffered: metricValue(text, 'switchboard_request_log_rows_buffered'),
    answered: metricValue(text, 'switchboard_requests_total'),
  };
}

async function health(origin) {
  const response = await request(`${origin}/health`);
  return (await response.body.json()).status;
}

/** Stops the bench's embedded PostgreSQL (fast shutdown) and waits until it is gone. */
async function stopPostgres() {
  const pid = Number(readFileSync(postmasterPidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${postmasterPidFile}`);
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 10_000; waited += 100) {
    try {
      process.kill(pid, 0);
    } catch {
      return pid;
    }
    await sleep(100);
  }
  throw new Error(`postgres ${pid} did not stop within 10 s`);
}

const number = (value, digits) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

async function main() {
  const resultsDir = join(benchDir, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const facts = runFacts(`node --import tsx bench/recording/request-log-outage.mjs${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`);
  const target = targets.find((candidate) => candidate.id === 'switchboard-log-small-buffer');
  const upstream = await startSimulator({ resultsDir, name: 'outage' });
  const started = await target.start({ upstream, stream: false, resultsDir, nodeFlagsFor: () => [] });
  const rows = [];
  try {
    await checkOneRequest(started);
    const options = { connections, duration, warmup: 2 };
    const up = await measure(started, upstream.service, options);
    await sleep(2_000);
    const afterUp = await counters(started.origin);
    rows.push({ phase: 'Postgres up', result: up, counts: afterUp, health: await health(started.origin) });
    const pid = await stopPostgres();
    console.log(`stopped postgres (pid ${pid})`);
    const down = await measure(started, upstream.service, { ...options, warmup: 0 });
    const afterDown = await counters(started.origin);
    rows.push({ phase: 'Postgres stopped', result: down, counts: afterDown, health: await health(started.origin) });
  } finally {
    await stopService(started.service);
    await stopService(upstream.service);
    await stopAll();
  }
  const lines = [
    `Command: \`${facts.command}\``,
    '',
    `Date: ${facts.date} · Node ${facts.node} · CPU: ${facts.cpu} · 1-min load average before the run: ${facts.loadBefore}`,
    '',
    `${connections} connections, ${duration} s per window, Switchboard with the request log on and \`request_log.max_buffered_rows: 2000\` (so a short window fills it); between the windows the bench's embedded PostgreSQL is stopped (SIGINT to its postmaster, a fast shutdown). Rows counted from the node's /metrics at the end of each window (cumulative).`,
    '',
    '| window | RPS | p50 ms | p99 ms | errors / non-2xx | CPU ms / request | /health | rows written | rows dropped | rows buffered | requests answered |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |',
    ...rows.map(({ phase, result, counts, health: status }) => `| ${phase} | ${Math.round(result.rps).toLocaleString('en-US')} | ${number(result.p50, 0)} | ${number(result.p99, 0)} | ${result.errors} / ${result.non2xx} | ${number(result.cpuMsPerRequest, 3)} | ${status} | ${counts.written} | ${counts.dropped} | ${counts.buffered} | ${counts.answered} |`),
  ];
  if (rows.length === 2) {
    const [up, down] = rows;
    lines.push('', `- RPS with Postgres stopped / up: ${number(down.result.rps / up.result.rps, 2)}x; errors and non-2xx while stopped: ${down.result.errors} / ${down.result.non2xx}`);
    lines.push(`- Rows dropped while stopped: ${down.counts.dropped - up.counts.dropped} (the buffer holds 2,000 rows here, \`request_log.max_buffered_rows\`; the oldest go first), every one counted in \`switchboard_request_log_rows_dropped_total\``);
  }
  const section = lines.join('\n');
  console.log(`\n${section}\n`);
  if (!values['no-readme'] && rows.length === 2) {
    replaceSection(join(benchDir, 'README.md'), 'request-log-outage', section);
    console.log('wrote the request-log-outage section of bench/README.md');
  }
}

process.on('exit', killAllNow);
main().catch(async (error) => {
  console.error(error?.stack ?? error);
  await stopAll();
  process.exitCode = 1;
});
