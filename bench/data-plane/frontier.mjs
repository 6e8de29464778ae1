/**
 * The frontier bench of issue 38 (item 4): today's single-process node beside a bare
 * node:http + undici pass-through and @portkey-ai/gateway, against a minimal mock upstream
 * (frontier-mock.mjs) with 0 ms and 20 ms latency, in one run:
 *   1. added latency p50/p99 at concurrency 1 against the mock direct (targets take turns);
 *   2. sustained RPS at 20 ms latency, `--concurrency` requests in flight;
 *   3. `--streams` SSE streams held at once: added time to first content, p50/p99;
 *   4. RSS of each process (idle, and the most seen under each load);
 *   5. cold start: process start to the first served chat completion, existing database.
 * Each gateway runs pinned to `--gateway-cpu` (taskset), the mock, the load generator (this
 * process) and PostgreSQL to `--load-cpu`. Every phase is bounded in count and in time.
 *
 *   npm run bench:frontier -- [--portkey /tmp/portkey] [--no-readme] [--quick]
 *     [--concurrency 256] [--streams 512] [--chunk-delay 100] [--gateway-cpu 1] [--load-cpu 0]
 *     [--workers 2]   (the second Switchboard target: N workers on every core)
 *   (or PORTKEY_GATEWAY_DIR=/tmp/portkey; without either, the Portkey column is skipped)
 *
 * Cold start alone (phase 5 only; nothing written to the README):
 *   npm run bench:frontier -- --only cold-start [--cold-starts 15] [--against <checkout>]
 *     [--background-nodes 10]
 *   --against: another checkout's packages/gateway/bin/switchboard.js started in turns with this
 *   one (A, B, B, A, ...), so a change is compared within one run on the same database;
 *   --background-nodes: that many other Switchboard nodes (a fleet of their own, unpinned,
 *   idle) run on the machine while the cold starts are timed.
 *
 * Switchboard gets its own database on a private embedded PostgreSQL (DATABASE_URL, as in
 * compose and Kubernetes), one openai key on the mock, the request log off (as the issue 2
 * `switchboard` target) and `--p2p-port 0`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Agent, request } from 'undici';
import { freePort, startPrivateServer } from '@switchboard/test-kit';
import { closedLoop, heldStreams, quantile, turnsAtConcurrencyOne } from '../lib/frontier-load.mjs';
import { cpuMs, killAllNow, logTail, rssMb, startService, stopAll, stopService, waitUntilReady } from '../lib/processes.mjs';
import { replaceSection, runFacts } from '../lib/report.mjs';
import { chatBody, portkeyHeaders, portkeyLaunch, SWITCHBOARD_BIN, UPSTREAM_KEY } from '../lib/targets.mjs';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const dataPlaneDir = dirname(fileURLToPath(import.meta.url));
const resultsDir = join(benchDir, 'results', 'frontier');
mkdirSync(resultsDir, { recursive: true });

const { values } = parseArgs({
  options: {
    portkey: { type: 'string', default: process.env.PORTKEY_GATEWAY_DIR ?? '' },
    'gateway-cpu': { type: 'string', default: '1' },
    'load-cpu': { type: 'string', default: '0' },
    // the workers of the second Switchboard target (issue 38, item 1)
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '256' },
    streams: { type: 'string', default: '512' },
    // the mock's gap between stream events; Switchboard holds one event back (README, issue 35)
    'chunk-delay': { type: 'string', default: '100' },
    quick: { type: 'boolean', default: false },
    'no-readme': { type: 'boolean', default: false },
    only: { type: 'string', default: '' },
    'cold-starts': { type: 'string', default: '' },
    against: { type: 'string', default: '' },
    'background-nodes': { type: 'string', default: '0' },
  },
});
if (values.only !== '' && values.only !== 'cold-start') throw new Error(`--only: the one phase that runs alone is cold-start (got "${values.only}")`);
const coldStartOnly = values.only === 'cold-start';
const quick = values.quick;
const concurrency = Math.min(1024, Math.max(1, Number(values.concurrency)));
const streamCount = Math.min(2048, Math.max(1, Number(values.streams)));
// every phase bounded in count and in time; --quick is a smoke check of a few seconds
const phases = {
  turns0: { warmup: quick ? 20 : 300, rounds: quick ? 100 : 3_000, maxMs: quick ? 3_000 : 30_000 },
  turns20: { warmup: quick ? 2 : 20, rounds: quick ? 10 : 500, maxMs: quick ? 3_000 : 50_000 },
  rps: { warmupSeconds: quick ? 0.5 : 2, seconds: quick ? 1 : 8 },
  streams: { rampSeconds: quick ? 0.5 : 2, seconds: quick ? 1 : 6, chunkDelayMs: Math.min(1_000, Math.max(1, Number(values['chunk-delay']))), chunks: quick ? 2 : 20 },
  coldStarts: Math.min(200, Math.max(1, Number(values['cold-starts'] || (quick ? 1 : coldStartOnly ? 15 : 3)))),
  backgroundNodes: Math.min(50, Math.max(0, Number(values['background-nodes']))),
};
const againstBin = values.against ? join(values.against, 'packages/gateway/bin/switchboard.js') : '';
if (againstBin && !existsSync(againstBin)) throw new Error(`--against: no ${againstBin}`);

/** The Portkey package directory: given as the package itself or as an npm --prefix. */
function portkeyDir(given) {
  if (!given) return { skip: 'no --portkey / PORTKEY_GATEWAY_DIR given (`npm i --prefix /tmp/portkey @portkey-ai/gateway`)' };
  for (const candidate of [given, join(given, 'node_modules/@portkey-ai/gateway')]) {
    if (existsSync(join(candidate, 'build/start-server.js'))) return { dir: candidate };
  }
  return { skip: `no build/start-server.js under ${given}` };
}

const facts = runFacts(`npm run bench:frontier${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`);
const pinned = (cpu) => ({ command: 'taskset', prefix: ['-c', cpu, process.execPath] });
const cores = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
if (cores < 2) throw new Error('the frontier bench pins the gateway and the load to two different cores: it needs at least 2');
execFileSync('taskset', ['-a', '-pc', values['load-cpu'], String(process.pid)], { stdio: 'ignore' });

/** Starts a node script pinned to `cpu`, its output in results/frontier/<name>.log. */
function startPinned(name, cpu, args, extra = {}) {
  const { command, prefix } = pinned(cpu);
  return startService({ name, command, args: [...prefix, ...args], cwd: benchDir, logFile: join(resultsDir, `${name}.log`), ...extra });
}

const database = await startPrivateServer('frontier');
process.on('SIGINT', () => {
  killAllNow();
  void database.dispose().then(() => process.exit(130));
});

async function answers(url, init) {
  const response = await request(url, init);
  await response.body.dump();
  return response.statusCode === 200;
}

async function setMock(origin, settings) {
  const response = await request(`${origin}/_mock/settings`, { method: 'PUT', body: JSON.stringify(settings) });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`mock settings: ${response.statusCode}`);
}

/** The mock's count of streams open at once (GET), or resets its peak (DELETE). */
async function mockStreams(origin, method) {
  const response = await request(`${origin}/_mock/streams`, { method });
  return response.body.json();
}

/** A gateway's launch: what to spawn, how to tell it is ready, what to send it. */
function gatewayLaunches({ mockOrigin, databaseUrl, portkey }) {
  const configFile = join(resultsDir, 'switchboard.config.json');
  writeFileSync(configFile, `${JSON.stringify({
    providers: { openai: { keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: { base_url: mockOrigin } } },
    request_log: { enabled: false },
  }, null, 2)}\n`);
  const json = { 'content-type': 'application/json' };
  const switchboard = (id, label, bin, workers = '1') => ({
    id,
    label,
    args: (port) => [bin, 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1', '--p2p-port', '0', '--database-url', databaseUrl],
    // By its variable, not --workers: an --against checkout from before workers ignores it rather than refusing a flag.
    env: { NODE_ENV: 'production', SWITCHBOARD_WORKERS: workers },
    graceMs: 15_000,
    headers: json,
    model: 'openai/gpt-4o-mini',
  });
  return [
    // One worker: the 1-worker figures, pinned to one core.
    switchboard('switchboard', 'Switchboard (`switchboard serve`, 1 worker)', SWITCHBOARD_BIN),
    ...(againstBin ? [switchboard('switchboard-against', `Switchboard of ${values.against} (\`--against\`)`, againstBin)] : []),
    {
      ...switchboard('switchboard-workers', `Switchboard (\`--workers ${values.workers}\`, on every core: shared with the load)`, SWITCHBOARD_BIN, values.workers),
      skip: Number(values.workers) > 1 ? undefined : '--workers 1 given',
      // N workers on one core would show nothing; on every core they share it with the mock, the load and PostgreSQL.
      cpu: `${values['gateway-cpu']},${values['load-cpu']}`,
    },
    {
      id: 'passthrough-node',
      label: 'bare node:http + undici pass-through',
      // its upstream pool as large as the most streams held, so the floor is never pool-bound
      args: (port) => [join(dataPlaneDir, 'passthrough-node.mjs'), '--port', String(port), '--upstream', mockOrigin, '--connections', String(Math.max(concurrency, streamCount) * 2)],
      env: { NODE_ENV: 'production' },
      headers: { ...json, authorization: `Bearer ${UPSTREAM_KEY}` },
      model: 'gpt-4o-mini',
    },
    {
      id: 'portkey',
      label: '@portkey-ai/gateway',
      skip: portkey.skip,
      args: (port) => portkeyLaunch({ port, packageDir: portkey.dir }).args,
      env: portkeyLaunch({ port: 0, packageDir: portkey.dir ?? '' }).env,
      headers: portkeyHeaders(mockOrigin),
      model: 'gpt-4o-mini',
    },
  ];
}

/** A load target for `launch` on `origin`: a plain and a streaming variant. */
function loadTarget(id, url, headers, model, service) {
  return {
    id,
    service,
    plain: { id, url, headers, body: chatBody(model, false) },
    stream: { id, url, headers, body: chatBody(model, true) },
  };
}

/**
 * Spawns a gateway pinned to the gateway core and times it from spawn to its first answered
 * chat completion (polling every 5 ms; a refused connection or a 503 is "not yet").
 */
async function startTimed(launch, name = launch.id) {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const started = performance.now();
  const service = startPinned(name, launch.cpu ?? values['gateway-cpu'], launch.args(port), { env: launch.env, graceMs: launch.graceMs ?? 5_000 });
  const dispatcher = new Agent({ connections: 1 });
  const body = chatBody(launch.model, false);
  let firstServedMs = NaN;
  let cpuToFirstServedMs = NaN;
  try {
    await waitUntilReady(service, async () => {
      if (!(await answers(`${origin}/v1/chat/completions`, { method: 'POST', headers: launch.headers, body, dispatcher }))) return false;
      firstServedMs = performance.now() - started;
      // its CPU time by then (10 ms ticks): what a busy machine does not stretch, unlike the wall time
      cpuToFirstServedMs = cpuMs(service).node;
      return true;
    }, { timeoutMs: 120_000, intervalMs: 5 });
  } finally {
    await dispatcher.close();
  }
  return { service, origin, firstServedMs, cpuToFirstServedMs };
}

/**
 * `--background-nodes`: a fleet of that many Switchboard nodes on the same database, left idle,
 * spread over every core (not pinned as the timed gateway is), so cold starts are timed while
 * they share the machine. Each waits for its "listening" line.
 */
async function startBackgroundFleet(count, { configFile, databaseUrl }) {
  const cpus = `0-${cores - 1}`;
  const p2pPorts = [];
  for (let index = 0; index < count; index += 1) p2pPorts.push(await freePort());
  const seeds = p2pPorts.slice(0, 3).map((port) => `127.0.0.1:${port}`);
  const nodes = [];
  for (let index = 0; index < count; index += 1) {
    const port = await freePort();
    const peers = seeds.filter((seed) => seed !== `127.0.0.1:${p2pPorts[index]}`);
    nodes.push(startService({
      name: `background-${index + 1}`,
      command: 'taskset',
      args: ['-c', cpus, process.execPath, SWITCHBOARD_BIN, 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1', '--node-id', `background-${index + 1}`,
        '--p2p-port', String(p2pPorts[index]), '--peers', peers.join(','), '--fleet-secret', 'frontier-background-fleet-0123456789', '--database-url', databaseUrl],
      cwd: benchDir,
      env: { NODE_ENV: 'production' },
      logFile: join(resultsDir, `background-${index + 1}.log`),
      graceMs: 15_000,
    }));
  }
  // the whole log: peers joining follow the line within a second
  for (const node of nodes) await waitUntilReady(node, async () => logTail(node, 1_000_000).includes('switchboard listening on'), { timeoutMs: 120_000, intervalMs: 100 });
  return nodes;
}

const rows = new Map();
const row = (id) => rows.get(id) ?? rows.set(id, { rss: {} }).get(id);
const notes = [];
let mock;
let targets = [];
let background = [];
try {
  // the mock, on the load generator's core
  const mockPort = await freePort();
  mock = startPinned('mock', values['load-cpu'], [join(dataPlaneDir, 'frontier-mock.mjs'), '--port', String(mockPort)]);
  const mockOrigin = `http://127.0.0.1:${mockPort}`;
  await waitUntilReady(mock, async () => logTail(mock).includes('listening'));
  const postmaster = Number(execFileSync('head', ['-1', join(database.dataDir, 'postmaster.pid')], { encoding: 'utf8' }).trim());
  // PostgreSQL's backends fork from the postmaster later and inherit its core
  execFileSync('taskset', ['-a', '-pc', values['load-cpu'], String(postmaster)], { stdio: 'ignore' });
  const admin = new pg.Client({ connectionString: database.handle.url });
  await admin.connect();
  await admin.query('CREATE DATABASE frontier');
  await admin.end();
  const databaseUrl = Object.assign(new URL(database.handle.url), { pathname: '/frontier' }).toString();

  const launches = gatewayLaunches({ mockOrigin, databaseUrl, portkey: portkeyDir(values.portkey) });
  const configFile = join(resultsDir, 'switchboard.config.json');
  targets.push(loadTarget('direct', `${mockOrigin}/v1/chat/completions`, { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` }, 'gpt-4o-mini', mock));
  row('direct').label = 'mock direct (no gateway)';
  for (const launch of launches) {
    row(launch.id).label = launch.label;
    if (launch.skip) {
      row(launch.id).skipped = launch.skip;
      console.log(`${launch.id}: skipped: ${launch.skip}`);
      continue;
    }
    // the first start of Switchboard creates its schema: not a cold start with an existing database
    const { service, origin, firstServedMs } = await startTimed(launch);
    console.log(`${launch.id}: serving on ${origin} (${firstServedMs.toFixed(0)} ms from spawn${launch.id === 'switchboard' ? ', fresh database' : ''})`);
    if (launch.id === 'switchboard') row(launch.id).freshStartMs = firstServedMs;
    targets.push({ ...loadTarget(launch.id, `${origin}/v1/chat/completions`, launch.headers, launch.model, service), launch });
  }
  await sleep(1_000);
  for (const target of targets) row(target.id).rss.idle = rssMb(target.service);

  // 1. concurrency 1, targets taking turns
  for (const latency of coldStartOnly ? [] : [0, 20]) {
    await setMock(mockOrigin, { latency_ms: latency });
    const phase = latency === 0 ? phases.turns0 : phases.turns20;
    const began = performance.now();
    const results = await turnsAtConcurrencyOne(targets.map((target) => target.plain), phase);
    console.log(`concurrency 1 at ${latency} ms: ${((performance.now() - began) / 1000).toFixed(1)} s`);
    for (const [id, result] of results) {
      row(id)[`c1at${latency}`] = { p50: quantile(result.latencies, 0.5), p99: quantile(result.latencies, 0.99), count: result.latencies.length, errors: result.errors };
      if (result.errors) console.log(`  ${id}: ${result.errors} errors, last: ${result.lastError}`);
    }
  }

  // 2. sustained RPS at 20 ms
  await setMock(mockOrigin, { latency_ms: 20 });
  for (const target of coldStartOnly ? [] : targets) {
    let cpuBefore = 0;
    let rssMax = 0;
    let cpuDuring = NaN;
    // the load core: this process and the mock (for "direct", the mock is the target)
    let loadBefore = 0;
    let loadDuring = NaN;
    const loadCpuMs = () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1000 + (target.service === mock ? 0 : cpuMs(mock).node);
    };
    const result = await closedLoop(target.plain, {
      concurrency,
      ...phases.rps,
      onWindow: (edge) => {
        const { node } = cpuMs(target.service);
        if (edge === 'start') {
          cpuBefore = node;
          loadBefore = loadCpuMs();
        } else {
          cpuDuring = node - cpuBefore;
          loadDuring = loadCpuMs() - loadBefore;
        }
      },
      onTick: () => { rssMax = Math.max(rssMax, rssMb(target.service)); },
    });
    row(target.id).rps = { ...result, cpuMsPerRequest: cpuDuring / result.completed, busyShare: cpuDuring / result.windowMs, loadShare: (loadDuring + (target.service === mock ? cpuDuring : 0)) / result.windowMs };
    row(target.id).rss.rps = rssMax;
    console.log(`RPS ${target.id}: ${Math.round(result.rps)} (p50 ${result.p50.toFixed(1)} p99 ${result.p99.toFixed(1)} ms, ${result.errors} errors${result.errors ? `: ${result.lastError}` : ''}), ${(100 * cpuDuring / result.windowMs).toFixed(0)}% of its core, load core ${(100 * row(target.id).rps.loadShare).toFixed(0)}%`);
  }

  // 3. streams held at once, 20 ms before the headers, then 20 events 100 ms apart
  await setMock(mockOrigin, { latency_ms: 20, chunk_delay_ms: phases.streams.chunkDelayMs, chunks: phases.streams.chunks });
  for (const target of coldStartOnly ? [] : targets) {
    let rssMax = 0;
    await mockStreams(mockOrigin, 'DELETE');
    const result = await heldStreams(target.stream, { streams: streamCount, ...phases.streams, onTick: () => { rssMax = Math.max(rssMax, rssMb(target.service)); } });
    row(target.id).streams = { ...result, upstreamPeak: (await mockStreams(mockOrigin, 'GET')).peak };
    row(target.id).rss.streams = rssMax;
    console.log(`streams ${target.id}: ${result.completed} measured, peak ${result.peakOpen} open (${row(target.id).streams.upstreamPeak} at the mock), first content p50 ${result.p50.toFixed(1)} p99 ${result.p99.toFixed(1)} ms, ${result.errors} errors${result.errors ? `: ${result.lastError}` : ''}`);
  }

  // 4. cold starts: each gateway stopped, then started again (Switchboard on its existing
  // database), the gateways taking turns (A B, then B A, ...) so a busier moment of the machine
  // weighs on each alike
  const started = targets.filter((candidate) => candidate.launch);
  for (const target of started) {
    await stopService(target.service);
    row(target.id).coldStarts = [];
    row(target.id).coldStartCpu = [];
  }
  if (phases.backgroundNodes > 0) {
    const began = performance.now();
    background = await startBackgroundFleet(phases.backgroundNodes, { configFile, databaseUrl });
    await sleep(2_000);
    console.log(`${background.length} background nodes running (started in ${((performance.now() - began) / 1000).toFixed(1)} s)`);
  }
  for (let attempt = 0; attempt < phases.coldStarts; attempt += 1) {
    const order = attempt % 2 === 0 ? started : [...started].reverse();
    for (const target of order) {
      const { service, firstServedMs, cpuToFirstServedMs } = await startTimed(target.launch, `${target.id}-cold-${attempt + 1}`);
      row(target.id).coldStarts.push(firstServedMs);
      row(target.id).coldStartCpu.push(cpuToFirstServedMs);
      await stopService(service);
    }
  }
  for (const target of started) console.log(`cold start ${target.id}: ${summary(row(target.id).coldStarts)}; its CPU time by then: ${summary(row(target.id).coldStartCpu)}`);
} finally {
  await Promise.all(background.map((node) => stopService(node)));
  await stopAll();
  await database.dispose();
}

// from process start: tsx loading the store package is part of the run's time
const runSeconds = process.uptime();
const markdown = coldStartOnly ? renderColdStarts() : render();
console.log(`\n${markdown}\n\nThe run took ${runSeconds.toFixed(0)} s.`);
if (!values['no-readme'] && !quick && !coldStartOnly) replaceSection(join(benchDir, 'README.md'), 'frontier', markdown);

/** Cold starts as median / p90 (nearest rank), with the fastest and the slowest. */
function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  if (sorted.length === 0) return 'n/a';
  const rank = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return `median ${rank(0.5).toFixed(0)}, p90 ${rank(0.9).toFixed(0)} ms (n ${sorted.length}, ${sorted[0].toFixed(0)}-${sorted.at(-1).toFixed(0)})`;
}

/** `--only cold-start`: one line per gateway. */
function renderColdStarts() {
  const lines = [
    `Command: \`${facts.command}\` · run time ${runSeconds.toFixed(0)} s`,
    '',
    `Date: ${facts.date} · Node ${facts.node} · CPU: ${facts.cpu} · 1-min load average before the run: ${facts.loadBefore}`,
    '',
    `From spawn (pinned to CPU ${values['gateway-cpu']}) to the first answered chat completion, polled every 5 ms, the gateways taking turns` +
      `${phases.backgroundNodes > 0 ? `, ${phases.backgroundNodes} other Switchboard nodes (one idle fleet, on every core) running` : ''}.`,
    '',
    '| target | cold start (wall) | its CPU time by then |',
    '| --- | --- | --- |',
  ];
  for (const [id, entry] of rows) {
    if (id === 'direct') continue;
    lines.push(`| ${entry.label} | ${entry.skipped ? `not run: ${entry.skipped} |` : `${summary(entry.coldStarts ?? [])} | ${summary(entry.coldStartCpu ?? [])}`} |`);
  }
  if (rows.get('switchboard')?.freshStartMs) lines.push('', `- Switchboard's first start in this run (fresh database: its schema created): ${rows.get('switchboard').freshStartMs.toFixed(0)} ms`);
  return lines.join('\n');
}

function render() {
  const number = (value, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const us = (value) => (Number.isFinite(value) ? `${Math.round(1000 * value)}` : 'n/a');
  const direct = rows.get('direct');
  const added = (id, phase, q) => (id === 'direct' ? '' : us(rows.get(id)[phase]?.[q] - direct[phase]?.[q]));
  const lines = [
    `Command: \`${facts.command}\` · run time ${number(runSeconds)} s`,
    '',
    `Date: ${facts.date} · Node ${facts.node} · CPU: ${facts.cpu} · 1-min load average before the run: ${facts.loadBefore}`,
    '',
    `Gateways pinned to CPU ${values['gateway-cpu']}; the mock, the load generator (undici, in the bench process) and PostgreSQL to CPU ${values['load-cpu']}. ` +
      `Concurrency 1: ${phases.turns0.rounds} turns at 0 ms, ${phases.turns20.rounds} at 20 ms (fewer if the phase's time ran out: see n), the targets taking turns request by request. ` +
      `RPS: ${concurrency} requests in flight, ${phases.rps.warmupSeconds} s warm-up, ${phases.rps.seconds} s measured. ` +
      `Streams: ${streamCount} held at once, opened over ${phases.streams.rampSeconds} s, then ${phases.streams.seconds} s measured; each waits 20 ms for its headers, then ${phases.streams.chunks} events ${phases.streams.chunkDelayMs} ms apart.`,
    '',
    '| target | c=1 at 0 ms: p50 / p99 µs (added) | c=1 at 20 ms: p50 / p99 µs (added) | n | RPS at 20 ms | CPU ms / request, share of its core | load core busy | streams: peak open at the client / at the mock, first content p50 / p99 ms | added first content p50 / p99 µs | stream errors | RSS MB idle / RPS / streams | cold start ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [id, entry] of rows) {
    if (entry.skipped) {
      lines.push(`| ${entry.label} | not run: ${entry.skipped.replaceAll('|', '\\|')} | | | | | | | | | | |`);
      continue;
    }
    const c1 = (phase) => (id === 'direct'
      ? `${us(entry[phase]?.p50)} / ${us(entry[phase]?.p99)} (mock)`
      : `${added(id, phase, 'p50')} / ${added(id, phase, 'p99')}`);
    const n = `${entry.c1at0?.count ?? 0} / ${entry.c1at20?.count ?? 0}${entry.c1at0?.errors || entry.c1at20?.errors ? ` (${(entry.c1at0?.errors ?? 0) + (entry.c1at20?.errors ?? 0)} errors)` : ''}`;
    const rps = entry.rps ? `${Math.round(entry.rps.rps).toLocaleString('en-US')}${entry.rps.errors ? ` (${entry.rps.errors} errors)` : ''}` : 'n/a';
    const cpu = entry.rps ? `${number(entry.rps.cpuMsPerRequest, 3)}, ${number(100 * entry.rps.busyShare)}%${id === 'direct' ? ' (mock)' : ''}` : 'n/a';
    const streams = entry.streams;
    const held = streams ? `${streams.peakOpen} / ${streams.upstreamPeak}, ${number(streams.p50, 1)} / ${number(streams.p99, 1)}` : 'n/a';
    const addedStreams = id === 'direct' || !streams ? '' : `${us(streams.p50 - direct.streams?.p50)} / ${us(streams.p99 - direct.streams?.p99)}`;
    const rss = `${number(entry.rss.idle)} / ${number(entry.rss.rps)} / ${number(entry.rss.streams)}`;
    const cold = entry.coldStarts ? entry.coldStarts.map((ms) => number(ms)).join(', ') : '';
    const load = entry.rps ? `${number(100 * entry.rps.loadShare)}%` : 'n/a';
    lines.push(`| ${entry.label} | ${c1('c1at0')} | ${c1('c1at20')} | ${n} | ${rps} | ${cpu} | ${load} | ${held} | ${addedStreams} | ${streams ? `${streams.errors}${streams.errors ? `: ${streams.lastError.slice(0, 80)}` : ''}` : ''} | ${rss} | ${cold} |`);
  }
  const switchboard = rows.get('switchboard');
  const floor = rows.get('passthrough-node');
  if (switchboard?.rps && floor?.rps) lines.push('', `- Switchboard CPU per request / pass-through's, in this run's RPS phase: ${number(switchboard.rps.cpuMsPerRequest / floor.rps.cpuMsPerRequest, 2)}x`);
  const workers = rows.get('switchboard-workers');
  if (switchboard?.rps && workers?.rps) lines.push(`- Switchboard with ${values.workers} workers on every core / 1 worker on one core, RPS at 20 ms: ${number(workers.rps.rps / switchboard.rps.rps, 2)}x (the N-worker node shares its cores with the mock, the load generator and PostgreSQL: this shows the workers serve together, not how they scale on cores of their own)`);
  if (switchboard?.freshStartMs) lines.push(`- Switchboard's first start in this run (fresh database: its schema created): ${number(switchboard.freshStartMs)} ms`);
  lines.push(...notes);
  return lines.join('\n');
}
