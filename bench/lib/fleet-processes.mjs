/**
 * Fleet node processes for the cluster benches (`propagation.mjs`, `fleet-scale.mjs`): each node
 * is a fixture driven over stdin/stdout with one JSON object a line (`ready`, `reply` and event
 * lines out, commands in), plus the timing, polling and /proc helpers both benches use. Every
 * process started here is remembered, so `killAll()` ends whatever is left, also when a run fails.
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'

export { clockTicks } from './processes.mjs'
import { clockTicks } from './processes.mjs'

/** Wall clock with sub-millisecond resolution, comparable between processes on one machine. */
export const preciseNow = () => performance.timeOrigin + performance.now()

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** `Promise.withResolvers`, which Node 20 lacks. */
export function deferred() {
  let resolve
  let reject
  const promise = new Promise((yes, no) => {
    resolve = yes
    reject = no
  })
  return { promise, resolve, reject }
}

/** Resolves when `check()` holds, polling every 20 ms; rejects after `timeoutMs`. */
export async function until(check, timeoutMs, what) {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(20)
  }
}

/** The `fraction` percentile (nearest rank) of `values`, in any order. */
export function percentile(values, fraction) {
  const sorted = [...values].sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]
}

/** Milliseconds for a table: one decimal under 10, whole above, `n/a` when unknown. */
export const formatMs = (ms) => (Number.isFinite(ms) ? (ms < 10 ? ms.toFixed(1) : Math.round(ms).toString()) : 'n/a')

/** CPU seconds (user + system) a process used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / clockTicks
}

/** Machine-wide busy seconds (all cores) so far, from /proc/stat. */
export function machineBusySeconds() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const idle = fields[3] + fields[4]
  return (fields.reduce((sum, value) => sum + value, 0) - idle) / clockTicks
}

/** Replaces what lies between `<!-- name:begin -->` and `<!-- name:end -->` in `path`. */
export function replaceSection(path, name, content) {
  const begin = `<!-- ${name}:begin -->`
  const end = `<!-- ${name}:end -->`
  const text = readFileSync(path, 'utf8')
  const start = text.indexOf(begin)
  const stop = text.indexOf(end)
  if (start < 0 || stop < start) throw new Error(`${path} has no ${begin} ... ${end} markers`)
  writeFileSync(path, text.slice(0, start) + `${begin}\n${content}\n${end}` + text.slice(stop + end.length))
}

const running = new Set()

/**
 * Starts `node --import tsx <fixture> <JSON config>` in `cwd`. The handle has `send(command)`
 * (fire and forget), `command(command, timeoutMs)` (resolves with the `reply` line of the same
 * id), `ready` / `readyAt` / `peerId` from the `ready` line, `exited`, and the last 4 kB of stderr.
 * Every parsed line also goes to `onLine(node, line)`.
 */
export function startFixture({ fixture, cwd, config, onLine = () => {}, nodeArgs = [] }) {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', fixture, JSON.stringify(config)], { cwd, stdio: ['pipe', 'pipe', 'pipe'] })
  const node = {
    config,
    child,
    pid: child.pid,
    spawnedAt: preciseNow(),
    ready: false,
    readyAt: undefined,
    peerId: undefined,
    exited: new Promise((resolve) => child.once('exit', resolve)),
    nextId: 1,
    replies: new Map(),
    stderr: '',
  }
  running.add(node)
  child.once('exit', () => running.delete(node))
  child.stdin.on('error', () => {})
  child.stderr.on('data', (chunk) => {
    node.stderr = (node.stderr + chunk).slice(-4_000)
  })
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line
    try {
      line = JSON.parse(text)
    } catch {
      return
    }
    if (line.event === 'ready') {
      node.ready = true
      node.readyAt = performance.now()
      node.peerId = line.peerId
    }
    if (line.event === 'log') node.lastLogs = [...(node.lastLogs ?? []).slice(-4), line.msg]
    if (line.event === 'reply') {
      node.replies.get(line.id)?.(line)
      node.replies.delete(line.id)
    }
    onLine(node, line)
  })
  node.send = (command) => {
    const id = node.nextId++
    child.stdin.write(`${JSON.stringify({ ...command, id })}\n`)
    return id
  }
  node.command = (command, timeoutMs = 30_000) => {
    const { promise, resolve, reject } = deferred()
    const id = node.nextId
    const timer = setTimeout(() => {
      node.replies.delete(id)
      reject(new Error(`${config.nodeId} did not answer ${command.command} in ${timeoutMs} ms`))
    }, timeoutMs)
    node.replies.set(id, (line) => {
      clearTimeout(timer)
      resolve(line)
    })
    node.send(command)
    return promise
  }
  return node
}

/** Sends `signal` (SIGKILL by default) unless the process already exited; resolves once it did. */
export async function killFixture(node, signal = 'SIGKILL') {
  if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill(signal)
  await node.exited
}

/** SIGKILLs every fixture process still running. */
export async function killAll() {
  await Promise.all([...running].map((node) => killFixture(node)))
}

/** Fixture processes still running. */
export const runningFixtures = () => [...running]
