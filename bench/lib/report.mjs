/**
 * Turns measurements into the markdown the README keeps: a table, the
 * targets of issue 2 checked against it, and the facts that make a number
 * mean something (command, date, Node version, CPU).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

function cpuModel() {
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (match) return match[1].trim();
  } catch {
    // not Linux
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

/** Facts about the machine and the run, printed above the table. */
export function runFacts(command) {
  return {
    command,
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpuModel()}, ${os.availableParallelism?.() ?? os.cpus().length} cores`,
    // other work on the machine skews every number: say how busy it was
    loadBefore: os.loadavg()[0].toFixed(2),
  };
}

const number = (value, digits) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

function row(entry) {
  if (entry.skipped) {
    const reason = entry.skipped.length > 200 ? `${entry.skipped.slice(0, 200)}...` : entry.skipped;
    return `| ${entry.label} | not run: ${reason.replaceAll('|', '\\|')} | | | | | | | |`;
  }
  const result = entry.measurement;
  const cpu = `${number(result.cpuMsPerRequest, 3)}${entry.cpuNote ? ` (${entry.cpuNote})` : ''}`;
  return `| ${entry.label} | ${Math.round(result.rps).toLocaleString('en-US')} | ${number(result.p50, 0)} | ${number(result.p99, 0)} | ${result.errors} / ${result.non2xx} | ${cpu} | ${number(result.rssMb, 0)} | ${number(result.upstreamCpuMsPerRequest, 3)} | ${number(100 * result.foreignCpuShare, 0)}% |`;
}

/** The median of the finite values (NaN when there are none). */
export function median(values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function ratio(numerator, denominator) {
  return Number.isFinite(numerator) && Number.isFinite(denominator) && denominator > 0 ? numerator / denominator : NaN;
}

/** The issue 2 targets, checked when the rows they need are there. */
function verdicts(entries, { paired = false } = {}) {
  const measured = entries.filter((entry) => !entry.skipped && entry.measurement.requests > 0);
  const byId = Object.fromEntries(measured.map((entry) => [entry.id, entry.measurement]));
  const lines = [];
  const switchboard = byId.switchboard;
  const skewed = (...results) => (results.some((result) => result.foreignCpuShare > 0.1) ? '; other work skewed these rows: rerun on an idle machine' : '');
  if (switchboard && byId.portkey) {
    const value = ratio(switchboard.rps, byId.portkey.rps);
    lines.push(`- Switchboard RPS / Portkey RPS: ${number(value, 2)}x (target >= 3x: ${value >= 3 ? 'met' : 'not met'}${skewed(switchboard, byId.portkey)})`);
  }
  if (switchboard && byId.passthrough) {
    const value = ratio(switchboard.cpuMsPerRequest, byId.passthrough.cpuMsPerRequest);
    lines.push(`- Switchboard CPU per request / pass-through CPU per request: ${number(value, 2)}x (target <= 1.5x: ${value <= 1.5 ? 'met' : 'not met'}${skewed(switchboard, byId.passthrough)})`);
  }
  if (switchboard && byId['passthrough-node']) {
    const value = ratio(switchboard.cpuMsPerRequest, byId['passthrough-node'].cpuMsPerRequest);
    lines.push(`- Switchboard CPU per request / node:http pass-through CPU per request: ${number(value, 2)}x (no target: the floor without Hono, which Switchboard's inference route also does without${skewed(switchboard, byId['passthrough-node'])})`);
  }
  const logged = byId['switchboard-log'];
  if (switchboard && logged) {
    const cpu = ratio(logged.cpuMsPerRequest, switchboard.cpuMsPerRequest);
    const rps = ratio(logged.rps, switchboard.rps);
    const pairs = entries.find((entry) => entry.id === 'switchboard')?.rounds;
    const loggedRounds = entries.find((entry) => entry.id === 'switchboard-log')?.rounds;
    // Paired rounds: the two windows of a round are seconds apart, so their ratio cancels the
    // host's drift (its speed moves by 1.5-2x over minutes); the median of those ratios is what
    // the target is judged on. The ratio of the two columns' medians is printed beside it.
    const pairedRounds = paired && pairs && loggedRounds && pairs.length === loggedRounds.length && pairs.length > 1;
    const each = pairs && loggedRounds ? pairs.map((off, index) => ({ cpu: ratio(loggedRounds[index].cpuMsPerRequest, off.cpuMsPerRequest), rps: ratio(loggedRounds[index].rps, off.rps) })) : [];
    const judgedCpu = pairedRounds ? median(each.map((pair) => pair.cpu)) : cpu;
    const judgedRps = pairedRounds ? median(each.map((pair) => pair.rps)) : rps;
    const basis = (columns) => (pairedRounds ? `median of the ${each.length} paired rounds' ratios; the columns' medians give ${number(columns, 2)}x` : 'the columns');
    lines.push(`- Request log on / off, CPU per request: ${number(judgedCpu, 2)}x (${basis(cpu)}; target within 15 %: ${judgedCpu <= 1.15 ? 'met' : 'not met'}${skewed(switchboard, logged)})`);
    lines.push(`- Request log on / off, RPS: ${number(judgedRps, 2)}x (${basis(rps)}; target within 15 %: ${judgedRps >= 0.85 ? 'met' : 'not met'})`);
    if (each.length > 0) lines.push(`- Request log on / off round by round (CPU per request / RPS): ${each.map((pair) => `${number(pair.cpu, 2)}x / ${number(pair.rps, 2)}x`).join(', ')}`);
    if (logged.requestLog) {
      const counts = logged.requestLog;
      lines.push(`- Request log rows: ${counts.written} written of ${counts.answered} requests answered (check, warm-up and window), ${counts.dropped} dropped, ${counts.buffered} still buffered 3 s after the load (target: none dropped: ${counts.dropped === 0 && counts.written === counts.answered ? 'met' : 'not met'})`);
    }
  }
  const keyed = byId['switchboard-gateway-key'];
  if (switchboard && keyed) {
    const extraUs = 1000 * (keyed.cpuMsPerRequest - switchboard.cpuMsPerRequest);
    const busy = skewed(switchboard, keyed) !== '';
    const verdict = busy ? 'not judged from this run: other work on the machine moved these rows by more than the check costs' : extraUs < 2 ? 'met' : 'not met';
    lines.push(`- Gateway key checked / no key, CPU per request: ${number(ratio(keyed.cpuMsPerRequest, switchboard.cpuMsPerRequest), 3)}x, ${number(extraUs, 1)} us per request difference (target: the check under 2 us: ${verdict}; \`node --import tsx bench/data-plane/gateway-keys.ts\` measures the check alone)`);
  }
  for (const [id, result] of Object.entries(byId)) {
    if (result.foreignCpuShare > 0.1) lines.push(`- ${id}: other work on the machine took ${number(100 * result.foreignCpuShare, 0)}% of its CPU during the window: these numbers are skewed`);
    // a helper process (tsx's esbuild, the embedded PostgreSQL) worth mentioning
    if (result.otherCpuMs > 0.01 * result.cpuMs) {
      lines.push(`- ${id}: its helper processes (not node: tsx's esbuild, its embedded PostgreSQL) used ${number(result.otherCpuMs, 0)} ms CPU in the window, ${number(result.otherCpuMs / result.requests, 4)} ms per request, not in the column`);
    }
  }
  return lines;
}

/** The markdown section for one run. */
export function renderSection({ facts, options, entries }) {
  const mode = options.stream ? 'streaming (`stream: true`)' : 'non-streaming';
  return [
    `Command: \`${facts.command}\``,
    '',
    `Date: ${facts.date} · Node ${facts.node} · CPU: ${facts.cpu} · 1-min load average before the run: ${facts.loadBefore}`,
    '',
    `${options.connections} connections, ${options.warmup} s warm-up then ${options.duration} s measured per target, ${mode} requests, one target at a time, each with a fresh simulator; autocannon runs in the bench process on the same 2 cores.${options.rounds > 1 ? ` ${options.rounds} rounds (every other round in the reverse order): each number is the median of a target's rounds, errors and request log rows are summed.` : ''}${options.paired ? ' Paired: every target was started once and kept running, and the rounds took turns on the live processes (the Switchboard targets sharing the embedded PostgreSQL).' : ''}`,
    '',
    '| target | RPS | p50 ms | p99 ms | errors / non-2xx | CPU ms / request (gateway process) | RSS MB at end | simulator CPU ms / request | other work on the machine |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...entries.map(row),
    '',
    ...verdicts(entries, { paired: options.paired }),
  ].join('\n').trimEnd();
}

/**
 * Replaces the text between `<!-- name:begin -->` and `<!-- name:end -->` in
 * the README; appends the marked section when the markers are missing.
 */
export function replaceSection(readmePath, name, content) {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const text = existsSync(readmePath) ? readFileSync(readmePath, 'utf8') : '';
  const block = `${begin}\n${content}\n${end}`;
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  const next = start >= 0 && stop > start
    ? text.slice(0, start) + block + text.slice(stop + end.length)
    : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(readmePath, next);
}
