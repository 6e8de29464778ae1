/**
 * HTTP benchmark of issue 2: in one run on this machine, the same small
 * chat.completions request at a fixed number of connections
 *   a. direct to the simulator,
 *   b. through Switchboard,
 *   c. through a bare Hono + undici pass-through (the floor of this stack),
 *   d. through @portkey-ai/gateway,
 * one after another, each target in its own process. Reports RPS, p50/p99
 * latency, errors, CPU ms per request of the gateway process and its RSS,
 * prints a markdown table and writes it into README.md.
 *
 *   (cd bench && npm install) && node --import tsx bench/data-plane/http.mjs [--duration 10] [--warmup 2]
 *     [--connections 50] [--stream] [--targets direct,switchboard,...]
 *     [--no-readme] [--profile switchboard,...] [--quiet-wait 60]
 *     [--node-flags=--max-semi-space-size=64] [--rounds 3]
 *
 * --quiet-wait: before each target, wait up to that many seconds for other
 * work on the machine to stop (0: do not wait).
 *
 * --profile runs the named targets under `node --cpu-prof` (profiles land in
 * results/profiles/ when the process exits on SIGTERM); such a run's numbers
 * carry the profiler's cost and do not go into README.md.
 *
 * --rounds N measures every target N times, round after round (every other round in the
 * reverse order, so a slow stretch of the machine weighs on each target alike), and reports
 * each target's median: RPS, latency and CPU per request each the median of its rounds,
 * request log rows summed. A single round moves by tens of percent on this shared host;
 * the median of a few holds.
 *
 * --paired (with --rounds): every target is started once, all side by side, and the rounds
 * take turns on the live processes, so two targets' windows are seconds apart instead of a
 * restart apart (what bench/data-plane/ab.ts does for two checkouts). Each target keeps its own process
 * and simulator; the Switchboard targets share the bench's embedded PostgreSQL. With --paired
 * the request log's on/off targets are judged on the median of the rounds' own on/off ratios
 * (each from two windows seconds apart), the ratio of the columns' medians printed beside it.
 * Up to 25 rounds; many short ones (--rounds 15 --duration 5 --warmup 1) pair best.
 *
 * --node-flags gives every node target (Switchboard, the pass-throughs, Portkey; not the
 * simulator) the same extra node flags.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkOneRequest, measure } from '../lib/load.mjs';
import { killAllNow, machineBusyMs, stopAll, stopService } from '../lib/processes.mjs';
import { median, renderSection, replaceSection, runFacts } from '../lib/report.mjs';
import { startSimulator, targets } from '../lib/targets.mjs';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');

function readOptions() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '50' },
      stream: { type: 'boolean', default: false },
      targets: { type: 'string', default: targets.filter((target) => !target.notByDefault).map((target) => target.id).join(',') },
      'no-readme': { type: 'boolean', default: false },
      profile: { type: 'string', default: '' },
      'node-flags': { type: 'string', default: '' },
      'quiet-wait': { type: 'string', default: '60' },
      section: { type: 'string', default: '' },
      rounds: { type: 'string', default: '1' },
      paired: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log('node --import tsx bench/data-plane/http.mjs [--duration s] [--warmup s] [--connections n] [--stream] [--targets a,b] [--no-readme] [--profile a,b] [--quiet-wait s] [--section name] [--node-flags=...] [--rounds n] [--paired]');
    process.exit(0);
  }
  // every load loop stays bounded in time: refuse silly windows
  const bounded = (name, value, min, max) => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
      throw new Error(`--${name} must be a number from ${min} to ${max}, got ${value}`);
    }
    return parsed;
  };
  const wanted = values.targets.split(',').map((id) => id.trim()).filter(Boolean);
  for (const id of [...wanted, ...values.profile.split(',').map((id) => id.trim()).filter(Boolean)]) {
    if (!targets.some((target) => target.id === id)) throw new Error(`unknown target ${id}; known: ${targets.map((target) => target.id).join(', ')}`);
  }
  return {
    duration: bounded('duration', values.duration, 1, 120),
    warmup: bounded('warmup', values.warmup, 0, 30),
    rounds: bounded('rounds', values.rounds, 1, 25),
    paired: values.paired,
    connections: bounded('connections', values.connections, 1, 500),
    stream: values.stream,
    targets: wanted,
    quietWait: bounded('quiet-wait', values['quiet-wait'], 0, 1800),
    profile: values.profile.split(',').map((id) => id.trim()).filter(Boolean),
    nodeFlags: values['node-flags'].split(' ').filter(Boolean),
    writeReadme: !values['no-readme'],
    // the README section to write (default http / http-stream); e.g. http-request-log for the log on/off pair
    section: values.section,
  };
}

/**
 * Waits (up to `maxSeconds`) until the machine has been mostly idle for two
 * seconds, so a target is not loaded while someone else's tests run.
 */
async function waitForQuiet(maxSeconds) {
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  const deadline = Date.now() + maxSeconds * 1000;
  let said = false;
  for (;;) {
    const before = machineBusyMs();
    await sleep(2_000);
    const busy = (machineBusyMs() - before) / (2_000 * cores);
    if (busy < 0.15) return;
    if (Date.now() >= deadline) {
      console.log(`  the machine is still ${(100 * busy).toFixed(0)}% busy with other work; measuring anyway`);
      return;
    }
    if (!said) console.log(`  the machine is ${(100 * busy).toFixed(0)}% busy with other work; waiting up to ${maxSeconds} s for it to calm down`);
    said = true;
  }
}

/**
 * One target with a simulator of its own, so no target inherits the state
 * (heap, sockets, counters) another left in the upstream.
 */
async function runTarget(target, options, shared) {
  const live = await startTarget(target, options, shared);
  if (live.skipped) return live;
  try {
    return await measureTarget(live, options);
  } finally {
    await stopTarget(live);
  }
}

/** Starts a target with a simulator of its own and checks one request; `{ skipped }` when it cannot run. */
async function startTarget(target, options, shared) {
  const reason = target.available?.();
  if (reason) return { skipped: reason };
  let upstream;
  let started;
  try {
    upstream = await startSimulator({ resultsDir: shared.resultsDir, name: target.id, nodeFlags: target.id === 'direct' ? shared.nodeFlagsFor('direct') : [] });
    started = await target.start({ ...shared, upstream, stream: options.stream });
    const check = await checkOneRequest(started);
    console.log(`  check request: ${check.status}${check.stream ? ' (stream)' : ''} ${check.sample.slice(0, 100)}...`);
    return { upstream, started };
  } catch (error) {
    await stopTarget({ upstream, started });
    return { skipped: `failed: ${String(error.message ?? error).split('\n')[0]}`, error };
  }
}

/** One measured window of a live target (after the quiet wait); the request log's counters read after it when `counters`. */
async function measureTarget(live, options, { counters = true } = {}) {
  try {
    if (options.quietWait > 0) await waitForQuiet(options.quietWait);
    const measurement = await measure(live.started, live.upstream.service, options);
    if (counters && live.started.after) measurement.requestLog = await live.started.after();
    return { measurement, cpuNote: live.started.cpuNote };
  } catch (error) {
    return { skipped: `failed: ${String(error.message ?? error).split('\n')[0]}`, error };
  }
}

async function stopTarget({ upstream, started }) {
  if (started && started.service !== upstream?.service) await stopService(started.service);
  if (upstream) await stopService(upstream.service);
}

/** Prints one round's outcome of a target. */
function report(outcome) {
  if (outcome.skipped) {
    console.log(`  not measured: ${outcome.skipped}`);
    if (outcome.error) console.log(String(outcome.error.message ?? outcome.error).split('\n').slice(1, 12).join('\n'));
    return;
  }
  const result = outcome.measurement;
  if (result.requestLog) console.log(`  request log: ${result.requestLog.written} rows written of ${result.requestLog.answered} requests answered, ${result.requestLog.dropped} dropped, ${result.requestLog.buffered} still buffered`);
  console.log(`  ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, errors ${result.errors}, non-2xx ${result.non2xx}, ${result.cpuMsPerRequest.toFixed(3)} CPU ms/req (simulator ${result.upstreamCpuMsPerRequest.toFixed(3)}), load generator ${result.benchCpuMsPerRequest.toFixed(3)}, RSS ${result.rssMb.toFixed(0)} MB, machine busy ${(100 * result.machineBusyShare).toFixed(0)}%, other work on the machine ${(100 * result.foreignCpuShare).toFixed(0)}% of its CPU`);
}

/**
 * --paired: every target started once, side by side; the rounds take turns on the live
 * processes. The request log's counters are cumulative: read once, after the last round.
 */
async function runPaired(chosen, options, shared, outcomes) {
  const live = new Map();
  try {
    for (const target of chosen) {
      console.log(`\n${target.label}: starting`);
      const started = await startTarget(target, options, shared);
      if (started.skipped) {
        outcomes.get(target.id).push(started);
        report(started);
      } else live.set(target.id, started);
    }
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 1 ? chosen : [...chosen].reverse();
      for (const target of order) {
        const running = live.get(target.id);
        if (!running) continue;
        console.log(`\n${target.label} (round ${round} of ${options.rounds}, paired):`);
        const outcome = await measureTarget(running, options, { counters: round === options.rounds });
        outcomes.get(target.id).push(outcome);
        report(outcome);
      }
    }
  } finally {
    for (const running of live.values()) await stopTarget(running);
  }
}

/**
 * One target's rounds as one entry: a round not measured makes the entry not measured; else
 * every number is the median of the rounds, the request log's rows summed, and `rounds`
 * keeps each round's measurement.
 */
function combineRounds(outcomes) {
  const skipped = outcomes.find((outcome) => outcome.skipped);
  if (skipped) return skipped;
  if (outcomes.length === 1) return outcomes[0];
  const measurements = outcomes.map((outcome) => outcome.measurement);
  const measurement = {};
  for (const [name, value] of Object.entries(measurements[0])) {
    if (typeof value === 'number') measurement[name] = median(measurements.map((each) => each[name]));
  }
  // errors are counted, not typical: every round's add up
  measurement.errors = measurements.reduce((sum, each) => sum + each.errors, 0);
  measurement.non2xx = measurements.reduce((sum, each) => sum + each.non2xx, 0);
  const logs = measurements.map((each) => each.requestLog).filter(Boolean);
  if (logs.length > 0) {
    measurement.requestLog = {
      written: logs.reduce((sum, each) => sum + each.written, 0),
      answered: logs.reduce((sum, each) => sum + each.answered, 0),
      dropped: logs.reduce((sum, each) => sum + each.dropped, 0),
      buffered: Math.max(...logs.map((each) => each.buffered)),
    };
  }
  return { measurement, cpuNote: outcomes[0].cpuNote, rounds: measurements };
}

class UsageError extends Error {}

async function main() {
  let options;
  try {
    options = readOptions();
  } catch (error) {
    throw new UsageError(error.message);
  }
  const resultsDir = join(benchDir, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const command = `node --import tsx bench/data-plane/http.mjs${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  const facts = runFacts(command);
  console.log(`${facts.date} · Node ${facts.node} · ${facts.cpu}`);

  const entries = [];
  try {
    const profilesDir = join(resultsDir, 'profiles');
    const nodeFlagsFor = (id) => {
      if (!options.profile.includes(id)) return options.nodeFlags;
      // a directory per target: Node names each thread's profile itself (a
      // loader such as tsx runs a thread of its own beside the main one)
      const directory = join(profilesDir, id);
      mkdirSync(directory, { recursive: true });
      return [...options.nodeFlags, '--cpu-prof', `--cpu-prof-dir=${directory}`];
    };
    const chosen = targets.filter((candidate) => options.targets.includes(candidate.id));
    const outcomes = new Map(chosen.map((target) => [target.id, []]));
    if (options.paired) await runPaired(chosen, options, { resultsDir, nodeFlagsFor }, outcomes);
    else {
      for (let round = 1; round <= options.rounds; round++) {
        const order = round % 2 === 1 ? chosen : [...chosen].reverse();
        for (const target of order) {
          console.log(`\n${target.label}${options.rounds > 1 ? ` (round ${round} of ${options.rounds})` : ''}:`);
          const outcome = await runTarget(target, options, { resultsDir, nodeFlagsFor });
          outcomes.get(target.id).push(outcome);
          report(outcome);
          await sleep(500);
        }
      }
    }
    for (const target of chosen) entries.push({ id: target.id, label: target.label, external: Boolean(target.external), ...combineRounds(outcomes.get(target.id)) });
  } finally {
    await stopAll();
  }

  const section = renderSection({ facts, options, entries });
  console.log(`\n${section}\n`);
  if (options.profile.length > 0) {
    console.log(`CPU profiles in ${join(resultsDir, 'profiles')}; README.md left as it is (profiled numbers)`);
  } else if (entries.some((entry) => entry.skipped && !entry.external)) {
    console.log('README.md left as it is: a target of ours was not measured, and the table there is better than this one');
  } else if (options.writeReadme) {
    const name = options.section || (options.stream ? 'http-stream' : 'http');
    replaceSection(join(benchDir, 'README.md'), name, section);
    console.log(`wrote the ${name} section of bench/README.md`);
  }
  // a target of ours that could not be measured fails the run
  return entries.some((entry) => entry.skipped && !entry.external) ? 1 : 0;
}

process.on('exit', killAllNow);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping every process this run started`);
    stopAll().finally(() => process.exit(130));
  });
}

main().then(
  (code) => { process.exitCode = code; },
  (error) => {
    if (error instanceof UsageError) {
      console.error(`http.mjs: ${error.message}\n(node --import tsx bench/data-plane/http.mjs --help for the flags)`);
      process.exitCode = 2;
      return;
    }
    console.error(error?.stack ?? error);
    process.exitCode = 1;
  },
);
