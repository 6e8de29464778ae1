/**
 * A light, bounded load generator: a few requests a second spread over the nodes, for a
 * fixed time, counting what came back. Used by `npm start` and the chaos run.
 */

export interface LoadInit {
  targets: () => string[]
  models: readonly string[]
  ratePerSecond: number
  /** Stops by itself after this long... */
  durationMs: number
  /** ...or after this many requests. */
  maxRequests: number
  streamEvery?: number
  timeoutMs?: number
}

/** Counts per node: sent, served, failed (by status), transport errors (node down), and answers that did not end in time. */
export interface LoadTally {
  sent: number
  served: number
  failed: Record<string, number>
  unreachable: number
  /** No whole answer within the timeout: a reachable node, whose upstream is slow or stalled. */
  timedOut: number
}

const emptyTally = (): LoadTally => ({ sent: 0, served: 0, failed: {}, unreachable: 0, timedOut: 0 })

export interface LoadRun {
  tallies: Map<string, LoadTally>
  done: Promise<void>
  stop(): void
}

/** Starts the load; `done` resolves when the time or count runs out, or `stop` is called. */
export function startLoad(init: LoadInit): LoadRun {
  const tallies = new Map<string, LoadTally>()
  const tally = (target: string) => {
    let entry = tallies.get(target)
    if (!entry) tallies.set(target, (entry = emptyTally()))
    return entry
  }
  let stopped = false
  let count = 0
  const started = Date.now()
  const interval = 1000 / init.ratePerSecond
  const inFlight = new Set<Promise<void>>()
  const one = async (target: string, index: number) => {
    const entry = tally(target)
    entry.sent++
    const model = init.models[index % init.models.length]!
    const stream = init.streamEvery !== undefined && index % init.streamEvery === 0
    try {
      const response = await fetch(`${target}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-bf-session-id': `load-${index % 7}` },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: `request ${index}` }], stream }),
        signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
      })
      await response.arrayBuffer()
      if (response.status === 200) entry.served++
      else entry.failed[response.status] = (entry.failed[response.status] ?? 0) + 1
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') entry.timedOut++
      else entry.unreachable++
    }
  }
  const done = (async () => {
    while (!stopped && Date.now() - started < init.durationMs && count < init.maxRequests) {
      const targets = init.targets()
      if (targets.length > 0) {
        const target = targets[count % targets.length]!
        const request = one(target, count).finally(() => inFlight.delete(request))
        inFlight.add(request)
        count++
      }
      await new Promise((resolve) => setTimeout(resolve, interval))
    }
    await Promise.all(inFlight)
  })()
  return {
    tallies,
    done,
    stop() {
      stopped = true
    },
  }
}

/** A node as the load line shows it. */
export interface LoadLineNode {
  nodeId: string
  url: string
  running: boolean
}

/**
 * The launcher's periodic load line: what each node did since the last line (not since the
 * start, so a node that died stops showing counts it no longer earns), and `down` for a node
 * that is not running. Returns the line and the totals to pass as `previous` next time.
 */
export function loadLine(nodes: readonly LoadLineNode[], tallies: ReadonlyMap<string, LoadTally>, previous: ReadonlyMap<string, LoadTally>): { line: string; seen: Map<string, LoadTally> } {
  const seen = new Map<string, LoadTally>()
  const parts = nodes.map((node) => {
    const now = tallies.get(node.url) ?? emptyTally()
    seen.set(node.url, { ...now, failed: { ...now.failed } })
    if (!node.running) return `${node.nodeId}: down`
    const before = previous.get(node.url) ?? emptyTally()
    const failed = Object.entries(now.failed)
      .map(([status, count]) => [status, count - (before.failed[status] ?? 0)] as const)
      .filter(([, count]) => count > 0)
    const unreachable = now.unreachable - before.unreachable
    const timedOut = now.timedOut - before.timedOut
    return `${node.nodeId}: ${now.sent - before.sent} sent, ${now.served - before.served} served${failed.length ? `, failed ${failed.map(([status, count]) => `${count} x ${status}`).join(', ')}` : ''}${unreachable ? `, ${unreachable} unreachable` : ''}${timedOut ? `, ${timedOut} timed out` : ''}`
  })
  return { line: parts.join(' | '), seen }
}
