/**
 * Load for one target: a single checked request first (a target that answers
 * errors is not worth loading), then an unmeasured warm-up, then the measured
 * autocannon window with the service's CPU time read before and after.
 */
import os from 'node:os';
import { request } from 'undici';
import { cpuMs, machineBusyMs, rssMb } from './processes.mjs';

// autocannon is bench/'s own dependency (bench/package.json), not the root's: say so rather
// than leave a bare ERR_MODULE_NOT_FOUND when bench/node_modules was never installed.
const { default: autocannon } = await import('autocannon').catch((error) => {
  throw new Error(`autocannon is not installed: run (cd bench && npm install) first (${error.code ?? error.message})`);
});
const machineCores = () => os.availableParallelism?.() ?? os.cpus().length;

/** Hard cap on requests in one autocannon run, beside its duration. */
const MAX_REQUESTS_PER_RUN = 5_000_000;

/** Sends one request and throws unless it is a 200 with a chat completion. */
export async function checkOneRequest(target) {
  const response = await request(target.url, { method: 'POST', headers: target.headers, body: target.body });
  const text = await response.body.text();
  const stream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
  const looksRight = stream ? text.includes('chat.completion.chunk') && text.includes('[DONE]') : text.includes('"choices"');
  if (response.statusCode !== 200 || !looksRight) {
    throw new Error(`check request to ${target.url} got ${response.statusCode}: ${text.slice(0, 500)}`);
  }
  return { status: response.statusCode, stream, sample: text.slice(0, 300) };
}

function runAutocannon(target, { connections, duration }) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        method: 'POST',
        headers: target.headers,
        body: target.body,
        connections,
        duration,
        pipelining: 1,
        timeout: 10,
        maxOverallRequests: MAX_REQUESTS_PER_RUN,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    // a stuck run must not outlive its window by much
    const guard = setTimeout(() => instance.stop(), (duration + 15) * 1000);
    instance.on('done', () => clearTimeout(guard));
  });
}

/**
 * Warm-up, then the measured window. The simulator's CPU is read too, and
 * the machine's, to tell how much other work competed with the run. CPU per
 * request counts completed requests of every status, so a target that fails
 * fast is not flattered: its errors show in their own column.
 */
export async function measure(target, upstreamService, { connections, duration, warmup }, hooks = {}) {
  if (warmup > 0) await runAutocannon(target, { connections, duration: warmup });
  hooks.before?.();
  const machineBefore = machineBusyMs();
  const benchBefore = process.cpuUsage();
  const before = cpuMs(target.service);
  const upstreamBefore = target.service === upstreamService ? before : cpuMs(upstreamService);
  const result = await runAutocannon(target, { connections, duration });
  const after = cpuMs(target.service);
  hooks.after?.();
  const upstreamAfter = target.service === upstreamService ? after : cpuMs(upstreamService);
  const benchUsage = process.cpuUsage(benchBefore);
  const machineMs = machineBusyMs() - machineBefore;
  const completed = result.requests.total;
  const oursMs = (after.node + after.other - before.node - before.other)
    + (target.service === upstreamService ? 0 : upstreamAfter.node + upstreamAfter.other - upstreamBefore.node - upstreamBefore.other)
    + (benchUsage.user + benchUsage.system) / 1000;
  const seconds = result.duration || duration;
  return {
    requests: completed,
    rps: completed / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors, // timeouts included
    non2xx: result.non2xx,
    cpuMsPerRequest: completed > 0 ? (after.node - before.node) / completed : NaN,
    cpuMs: after.node - before.node,
    otherCpuMs: after.other - before.other,
    upstreamCpuMsPerRequest: completed > 0 ? (upstreamAfter.node - upstreamBefore.node) / completed : NaN,
    rssMb: rssMb(target.service),
    // the load generator (this process, autocannon) and the whole machine, to tell a saturated machine from an idle gateway
    benchCpuMsPerRequest: completed > 0 ? (benchUsage.user + benchUsage.system) / 1000 / completed : NaN,
    machineBusyShare: machineMs / (seconds * 1000 * machineCores()),
    // CPU that neither the bench, the target nor the simulator used: other
    // work on the machine that competed with the measurement
    foreignCpuShare: Math.max(0, machineMs - oursMs) / (seconds * 1000 * machineCores()),
  };
}
