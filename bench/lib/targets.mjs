/**
 * The four things a bench run loads, each started as its own process: the
 * upstream simulator itself (direct), Switchboard, the bare Hono + undici
 * pass-through and @portkey-ai/gateway. A target's `start()` returns the
 * service whose CPU is measured and the request to send it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import { logTail, startService, stopService, waitUntilReady } from './processes.mjs';
import { freePort } from '@switchboard/test-kit';

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoDir = resolve(benchDir, '..');
const require = createRequire(import.meta.url);

/** The key every target hands the simulator. */
export const UPSTREAM_KEY = 'sk-bench-1';
export const SIMULATOR_BIN = join(repoDir, 'packages/simulator/bin/simulator.js');
export const SWITCHBOARD_BIN = join(repoDir, 'packages/gateway/bin/switchboard.js');
/** Starts of Switchboard tried while its embedded database port is taken. */
const EMBEDDED_PORT_ATTEMPTS = 8;

/** The small chat request every target is sent. */
export function chatBody(model, stream) {
  const body = { model, messages: [{ role: 'user', content: 'hi' }] };
  if (stream) body.stream = true;
  return JSON.stringify(body);
}

async function answers(url, init = {}) {
  const response = await request(url, init);
  await response.body.dump();
  return response.statusCode === 200;
}

/** Starts the simulator (zero latency, no faults) that every target calls. */
export async function startSimulator({ resultsDir, name, nodeFlags = [] }) {
  const port = await freePort();
  if (!existsSync(SIMULATOR_BIN)) throw new Error(`simulator not found: ${SIMULATOR_BIN}`);
  const service = startService({
    name: 'simulator',
    args: [...nodeFlags, SIMULATOR_BIN, '--port', String(port)],
    cwd: benchDir,
    logFile: join(resultsDir, `simulator-for-${name}.log`),
  });
  const ready = `listening on http://127.0.0.1:${port}`;
  await waitUntilReady(service, async () => logTail(service, 10_000).includes(ready), { timeoutMs: 30_000 });
  return { service, origin: `http://127.0.0.1:${port}` };
}

/** Every target, in the order a run loads them. */
/** The gateway key of the `switchboard-gateway-key` target. */
const GATEWAY_KEY = 'sk-sb-bench-gateway-key-0123456789';

export const targets = [
  {
    id: 'direct',
    label: 'direct to the simulator',
    async start({ upstream, stream }) {
      return {
        service: upstream.service,
        url: `${upstream.origin}/v1/chat/completions`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
        body: chatBody('gpt-4o-mini', stream),
        cpuNote: 'simulator',
      };
    },
  },
  // The request log off (the gateway alone) and on (every request written to Postgres): issue 15.
  switchboardTarget('switchboard', 'Switchboard', { enabled: false }),
  switchboardTarget('switchboard-log', 'Switchboard, request log on', { enabled: true }),
  // The outage run's node: a smaller buffer, so a short window with Postgres stopped fills it.
  { ...switchboardTarget('switchboard-log-small-buffer', 'Switchboard, request log on, 2,000-row buffer', { enabled: true, max_buffered_rows: 2_000 }), notByDefault: true },
  // Issue 13: every request sends a gateway key (checked, counted under a requests-per-minute limit), beside `switchboard`.
  { ...switchboardTarget('switchboard-gateway-key', 'Switchboard, gateway key checked', { enabled: false }, { gatewayKey: GATEWAY_KEY }), notByDefault: true },
  passThrough('passthrough', 'bare Hono + undici pass-through', 'passthrough.mjs'),
  passThrough('passthrough-node', 'bare node:http + undici pass-through', 'passthrough-node.mjs'),
  {
    id: 'portkey',
    label: '@portkey-ai/gateway',
    // someone else's gateway: its failures are reported, not the run's
    external: true,
    async start({ upstream, stream, resultsDir, nodeFlagsFor }) {
      const port = await freePort();
      const { args, env } = portkeyLaunch({ port });
      const service = startService({
        name: 'portkey',
        args: [...nodeFlagsFor('portkey'), ...args],
        cwd: benchDir,
        env,
        logFile: join(resultsDir, 'portkey.log'),
      });
      const origin = `http://127.0.0.1:${port}`;
      await waitUntilReady(service, () => answers(`${origin}/`));
      return {
        service,
        url: `${origin}/v1/chat/completions`,
        headers: portkeyHeaders(upstream.origin),
        body: chatBody('gpt-4o-mini', stream),
      };
    },
  },
];

/**
 * How @portkey-ai/gateway is started: its node arguments and environment. `packageDir` is the
 * installed package (default: bench/'s own dependency).
 */
export function portkeyLaunch({ port, packageDir = dirname(require.resolve('@portkey-ai/gateway/package.json')) }) {
  return {
    // start-server.js has no host option: the preload pins listen() to 127.0.0.1
    args: ['--require', join(benchDir, 'lib', 'loopback-only.cjs'), join(packageDir, 'build/start-server.js'), '--headless', `--port=${port}`],
    // production: no /log/stream UI, which would otherwise expose request headers (keys)
    env: { NODE_ENV: 'production', TRUSTED_CUSTOM_HOSTS: '127.0.0.1' },
  };
}

/** The headers that point one Portkey request at the OpenAI-shaped upstream at `origin`. */
export function portkeyHeaders(origin) {
  return {
    'content-type': 'application/json',
    authorization: `Bearer ${UPSTREAM_KEY}`,
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${origin}/v1`,
  };
}

/** A pass-through floor (`passthrough*.mjs`): forwards the body and Authorization to the simulator. */
function passThrough(id, label, script) {
  return {
    id,
    label,
    async start({ upstream, stream, resultsDir, nodeFlagsFor }) {
      const port = await freePort();
      const service = startService({
        name: id,
        args: [...nodeFlagsFor(id), join(benchDir, 'data-plane', script), '--port', String(port), '--upstream', upstream.origin],
        cwd: benchDir,
        env: { NODE_ENV: 'production' },
        logFile: join(resultsDir, `${id}.log`),
      });
      const origin = `http://127.0.0.1:${port}`;
      await waitUntilReady(service, () => answers(`${origin}/health`));
      return {
        service,
        url: `${origin}/v1/chat/completions`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` },
        body: chatBody('gpt-4o-mini', stream),
      };
    },
  };
}

/** Reads a counter (summed over its labels) from Prometheus text. */
export function metricValue(text, name) {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The request log's counters of a running Switchboard, after its buffer had time to drain. */
async function requestLogCounters(origin, settleMs) {
  await sleep(settleMs);
  const response = await request(`${origin}/metrics`);
  const text = await response.body.text();
  return {
    written: metricValue(text, 'switchboard_request_log_rows_written_total'),
    dropped: metricValue(text, 'switchboard_request_log_rows_dropped_total'),
    buffered: metricValue(text, 'switchboard_request_log_rows_buffered'),
    answered: metricValue(text, 'switchboard_requests_total'),
  };
}

/**
 * Switchboard itself: `packages/gateway/bin/switchboard.js serve`, one openai key on the
 * simulator, its embedded PostgreSQL under bench/.switchboard, `request_log` as given.
 */
function switchboardTarget(id, label, requestLog, { gatewayKey } = {}) {
  return {
    id,
    label,
    available: () => (existsSync(SWITCHBOARD_BIN) ? null : `${SWITCHBOARD_BIN} does not exist yet`),
    async start({ upstream, stream, resultsDir, nodeFlagsFor, providers }) {
      const port = await freePort();
      const configFile = join(resultsDir, `${id}.config.json`);
      // `providers` (surfaces.mjs) replaces the one openai key of the HTTP run
      const config = {
        providers: providers ?? {
          openai: {
            keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }],
            network_config: { base_url: upstream.origin },
          },
        },
        request_log: requestLog,
        // a limit no run reaches, so the check and the count run on every request
        ...(gatewayKey ? { gateway_keys: [{ name: 'bench', value: gatewayKey, requests_per_minute: 100_000_000 }] } : {}),
      };
      writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
      const origin = `http://127.0.0.1:${port}`;
      let service;
      for (let attempt = 1; ; attempt += 1) {
        service = startService({
          name: id,
          args: [...nodeFlagsFor(id), SWITCHBOARD_BIN, 'serve', '--config', configFile, '--port', String(port), '--host', '127.0.0.1'],
          cwd: benchDir,
          env: { NODE_ENV: 'production' },
          logFile: join(resultsDir, `${id}.log`),
          // it stops its embedded PostgreSQL on SIGTERM and gives itself 10 s
          graceMs: 15_000,
          // that server runs as a daemon (out of the process tree) on the data
          // directory under the working directory: count its CPU as the gateway's helper
          helperCommandLine: join(benchDir, '.switchboard', 'postgres'),
        });
        try {
          // the first start may create an embedded PostgreSQL: give it time
          await waitUntilReady(service, () => answers(`${origin}/health`), { timeoutMs: 180_000, intervalMs: 250 });
          break;
        } catch (error) {
          // the embedded server's port is fixed (54329): while another
          // checkout's server (npm start, a test run) holds it, wait and retry
          const portTaken = /could not start on port|already in use/i.test(logTail(service));
          await stopService(service);
          if (!portTaken || attempt >= EMBEDDED_PORT_ATTEMPTS) throw error;
          console.log(`  ${id}: its embedded PostgreSQL port is taken by another server; retrying in 15 s (${attempt}/${EMBEDDED_PORT_ATTEMPTS})`);
          await sleep(15_000);
        }
      }
      return {
        service,
        origin,
        url: `${origin}/v1/chat/completions`,
        headers: { 'content-type': 'application/json', ...(gatewayKey ? { authorization: `Bearer ${gatewayKey}` } : {}) },
        body: chatBody('openai/gpt-4o-mini', stream),
        // After the window: did every answered request reach Postgres?
        after: requestLog.enabled ? () => requestLogCounters(origin, 3_000) : undefined,
      };
    },
  };
}
