/**
 * Child processes of a bench run: start a service with its output in a log
 * file, wait until it is ready, read its CPU time and RSS from /proc, and stop
 * it (SIGTERM to its process group, SIGKILL after a grace period). Every
 * service started here is remembered so `stopAll()` can end whatever is left,
 * even when the run fails half way.
 */
import { spawn, execFileSync } from 'node:child_process';
import { openSync, closeSync, readFileSync, readdirSync, existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const running = new Set();

/** Clock ticks per second of utime/stime in /proc/<pid>/stat. */
export const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * Starts `command args` in its own process group, stdout and stderr appended
 * to `logFile` (a pipe the bench would have to drain costs bench CPU).
 */
export function startService({ name, command = process.execPath, args, env = {}, cwd, logFile, graceMs = 5_000, helperCommandLine = undefined }) {
  const fd = openSync(logFile, 'w');
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', fd, fd],
    detached: true,
  });
  closeSync(fd);
  const service = { name, child, pid: child.pid, logFile, graceMs, helperCommandLine, exited: null };
  service.exitPromise = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      service.exited = { code, signal };
      running.delete(service);
      resolve(service.exited);
    });
    child.once('error', (error) => {
      service.exited = { code: null, signal: null, error };
      running.delete(service);
      resolve(service.exited);
    });
  });
  running.add(service);
  return service;
}

/** The last `bytes` of a service's log, for error messages. */
export function logTail(service, bytes = 2_000) {
  try {
    const text = readFileSync(service.logFile, 'utf8');
    return text.slice(-bytes).trim();
  } catch {
    return '';
  }
}

/**
 * Polls `probe()` until it returns true, the service exits, or `timeoutMs`
 * passes; throws with the log tail in the last two cases.
 */
export async function waitUntilReady(service, probe, { timeoutMs = 30_000, intervalMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.exited) {
      throw new Error(`${service.name} exited before it was ready (${JSON.stringify(service.exited)}):\n${logTail(service)}`);
    }
    try {
      if (await probe()) return;
    } catch {
      // not up yet
    }
    await sleep(intervalMs);
  }
  throw new Error(`${service.name} was not ready within ${timeoutMs} ms:\n${logTail(service)}`);
}

/** SIGTERM to the service's process group, SIGKILL if it is not gone in its grace period. */
export async function stopService(service) {
  if (service.exited) return;
  const { graceMs } = service;
  signalGroup(service, 'SIGTERM');
  const exited = await Promise.race([service.exitPromise, sleep(graceMs).then(() => null)]);
  if (!exited) {
    signalGroup(service, 'SIGKILL');
    await Promise.race([service.exitPromise, sleep(2_000)]);
  }
  // the leader may be gone while a child it started still runs in its group
  signalGroup(service, 'SIGKILL');
}

function signalGroup(service, signal) {
  for (const target of [-service.pid, service.pid]) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      // no such group (or process): try the next form
    }
  }
}

/** Stops every service this module started that is still running. */
export async function stopAll() {
  await Promise.all([...running].map((service) => stopService(service)));
}

/** Last-resort synchronous kill, for process 'exit'. */
export function killAllNow() {
  for (const service of running) signalGroup(service, 'SIGKILL');
}

function readCommandLine(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

function readStat(pid) {
  return readStatFile(`/proc/${pid}/stat`, pid);
}

/**
 * One /proc stat file (a process's, or a thread's under /proc/<pid>/task): its name, parent
 * and CPU clock ticks, user and system.
 */
export function readStatFile(path, pid) {
  const text = readFileSync(path, 'utf8');
  // comm may contain spaces and parentheses: the fields start after the last ')'
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const fields = text.slice(close + 2).split(' ');
  const user = Number(fields[11]);
  const system = Number(fields[12]);
  // cutime + cstime: the children it has waited for (a server's exited backends).
  const reaped = Number(fields[13]) + Number(fields[14]);
  return { pid, comm, ppid: Number(fields[1]), user, system, ticks: user + system, reaped };
}

/**
 * The process and every live descendant of it; with `helperCommandLine`,
 * also the processes whose command line contains it (a server the service
 * started as a daemon, outside its tree).
 */
function processTree(rootPid, helperCommandLine) {
  const byParent = new Map();
  const helpers = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readStat(Number(entry));
      if (!byParent.has(stat.ppid)) byParent.set(stat.ppid, []);
      byParent.get(stat.ppid).push(stat);
      if (helperCommandLine && readCommandLine(stat.pid).includes(helperCommandLine)) helpers.push(stat);
    } catch {
      // exited while we looked
    }
  }
  const tree = [];
  try {
    tree.push(readStat(rootPid));
  } catch {
    return tree;
  }
  for (let index = 0; index < tree.length; index += 1) {
    tree.push(...(byParent.get(tree[index].pid) ?? []));
  }
  const inTree = new Set(tree.map((stat) => stat.pid));
  for (const helper of helpers) {
    if (!inTree.has(helper.pid)) {
      tree.push(helper, ...(byParent.get(helper.pid) ?? []));
      inTree.add(helper.pid);
    }
  }
  return tree;
}

/**
 * CPU time (user + system, ms) of a service: its node processes (a launcher
 * such as tsx may run the real server in a child) and, separately, any other
 * processes it started (an embedded database, say).
 */
export function cpuMs(service) {
  let node = 0;
  let other = 0;
  for (const stat of processTree(service.pid, service.helperCommandLine)) {
    const ms = (stat.ticks * 1000) / clockTicks;
    if (stat.pid === service.pid || stat.comm.startsWith('node')) node += ms;
    else other += ms;
  }
  return { node, other };
}

/** Resident set size (MB) of the service's node processes. */
export function rssMb(service) {
  let kilobytes = 0;
  for (const stat of processTree(service.pid)) {
    if (stat.pid !== service.pid && !stat.comm.startsWith('node')) continue;
    const path = `/proc/${stat.pid}/status`;
    if (!existsSync(path)) continue;
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(path, 'utf8'));
    if (match) kilobytes += Number(match[1]);
  }
  return kilobytes / 1024;
}

/**
 * CPU time (ms) the whole machine spent running processes since boot, from
 * /proc/stat: user, nice, system and steal. Interrupt and softirq time are
 * left out: on loopback most of it is the bench's own traffic, and the
 * kernel does not charge it to any process.
 */
export function machineBusyMs() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  // cpu user nice system idle iowait irq softirq steal ...
  const [user, nice, system, , , , , steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + (steal || 0)) * 1000) / clockTicks;
}

/**
 * CPU ms (user + system) of a PostgreSQL server: its postmaster, every live child (the
 * backends and background workers) and every child it has reaped (cutime and cstime), so a
 * backend that exits between two readings still counts.
 */
export function postgresCpuMs(postmaster) {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readStat(Number(entry));
      if (stat.pid !== postmaster && stat.ppid !== postmaster) continue;
      // A backend that exits between two readings moves from the live ones into the postmaster's reaped time.
      ticks += stat.ticks + (stat.pid === postmaster ? stat.reaped : 0);
    } catch {
      // exited while we looked
    }
  }
  return (ticks * 1000) / clockTicks;
}
