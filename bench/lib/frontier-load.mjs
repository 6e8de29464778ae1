/**
 * The frontier bench's three kinds of load, each bounded in count and in time, on undici in
 * the bench process (autocannon is bench/'s own dependency; these need only the root's undici):
 * single requests taking turns across targets, a closed loop of N concurrent requests, and N
 * concurrent SSE streams held open and replaced as they end.
 */
import { Agent, request } from 'undici';

/** The q-quantile of `values` (ms), or NaN when empty. */
export function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function once(target, dispatcher) {
  const started = performance.now();
  const answer = await request(target.url, { method: 'POST', headers: target.headers, body: target.body, dispatcher });
  await answer.body.dump({ limit: 1 << 20 });
  const elapsed = performance.now() - started;
  if (answer.statusCode !== 200) throw new Error(`${target.id}: status ${answer.statusCode}`);
  return elapsed;
}

/**
 * Concurrency 1: the targets take turns request by request (so whatever else the machine does
 * weighs on all alike), `rounds` measured turns after `warmup`, stopping early at `maxMs`.
 * Returns each target's latencies (ms) and errors.
 */
export async function turnsAtConcurrencyOne(targets, { warmup, rounds, maxMs }) {
  const dispatcher = new Agent({ connections: 1, keepAliveTimeout: 60_000 });
  const results = new Map(targets.map((target) => [target.id, { latencies: [], errors: 0, lastError: '' }]));
  const deadline = performance.now() + maxMs;
  try {
    for (let round = 0; round < warmup + rounds && performance.now() < deadline; round += 1) {
      for (const target of targets) {
        const result = results.get(target.id);
        try {
          const elapsed = await once(target, dispatcher);
          if (round >= warmup) result.latencies.push(elapsed);
        } catch (error) {
          result.errors += 1;
          result.lastError = String(error?.message ?? error);
        }
      }
    }
  } finally {
    await dispatcher.close();
  }
  return results;
}

/**
 * A closed loop: `concurrency` requests always in flight against one target for `seconds`
 * (after `warmupSeconds`), `onTick` called every 500 ms (for RSS samples). Returns completed
 * requests, errors, the window's length and latency p50/p99.
 */
export async function closedLoop(target, { concurrency, seconds, warmupSeconds, onWindow, onTick }) {
  const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 60_000, pipelining: 1 });
  const latencies = [];
  let completed = 0;
  let errors = 0;
  let lastError = '';
  let measuring = false;
  const start = performance.now();
  const windowStart = start + warmupSeconds * 1000;
  const end = windowStart + seconds * 1000;
  let measuredFrom = 0;
  const ticker = setInterval(() => {
    if (!measuring && performance.now() >= windowStart) {
      measuring = true;
      measuredFrom = performance.now();
      onWindow?.('start');
    }
    if (measuring) onTick?.();
  }, 500);
  const loop = async () => {
    while (performance.now() < end) {
      try {
        const elapsed = await once(target, dispatcher);
        if (measuring) {
          completed += 1;
          latencies.push(elapsed);
        }
      } catch (error) {
        if (measuring) errors += 1;
        lastError = String(error?.message ?? error);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, loop));
  } finally {
    clearInterval(ticker);
  }
  const windowMs = performance.now() - measuredFrom;
  onWindow?.('end');
  await dispatcher.close();
  return { completed, errors, lastError, windowMs, rps: (1000 * completed) / windowMs, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

/** One stream read to its end: ms to its first content event, or throws. */
async function oneStream(target, dispatcher) {
  const started = performance.now();
  const answer = await request(target.url, { method: 'POST', headers: target.headers, body: target.body, dispatcher });
  if (answer.statusCode !== 200) {
    await answer.body.dump();
    throw new Error(`${target.id}: status ${answer.statusCode}`);
  }
  let firstContent = -1;
  let text = '';
  for await (const part of answer.body) {
    if (firstContent < 0) {
      text += part.toString();
      if (/"content":"[^"]/.test(text)) firstContent = performance.now() - started;
    }
  }
  if (firstContent < 0 || !text.includes('[DONE]') && text.length < 200) throw new Error(`${target.id}: no content in ${text.slice(0, 200)}`);
  return firstContent;
}

/**
 * `streams` SSE streams held open at once against one target: opened over `rampSeconds`, each
 * replaced by a new one when it ends, for `seconds` after the ramp. Time to first content of
 * the streams opened after the ramp; `onTick` every 500 ms; `peakOpen` the most open at once.
 */
export async function heldStreams(target, { streams, seconds, rampSeconds, onTick }) {
  const dispatcher = new Agent({ connections: streams * 2, keepAliveTimeout: 60_000 });
  const firstContent = [];
  let errors = 0;
  let lastError = '';
  let open = 0;
  let peakOpen = 0;
  let completed = 0;
  const start = performance.now();
  const measureFrom = start + rampSeconds * 1000;
  const end = measureFrom + seconds * 1000;
  const ticker = setInterval(() => onTick?.(), 500);
  const holder = async (index) => {
    // spread the opening over the ramp, so the first second is not one burst of `streams` connects
    await new Promise((resolve) => setTimeout(resolve, (index / streams) * rampSeconds * 1000));
    while (performance.now() < end) {
      const openedAt = performance.now();
      open += 1;
      peakOpen = Math.max(peakOpen, open);
      try {
        const ms = await oneStream(target, dispatcher);
        if (openedAt >= measureFrom) {
          firstContent.push(ms);
          completed += 1;
        }
      } catch (error) {
        errors += 1;
        lastError = String(error?.message ?? error);
        // a target that fails fast must not spin this loop
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        open -= 1;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: streams }, (_, index) => holder(index)));
  } finally {
    clearInterval(ticker);
    await dispatcher.close();
  }
  return { completed, errors, lastError, peakOpen, p50: quantile(firstContent, 0.5), p99: quantile(firstContent, 0.99), max: quantile(firstContent, 1) };
}
