/**
 * The recorders' writer: rows are added synchronously from anywhere (the request path
 * included) into a bounded buffer, and written in batches by a background loop. When
 * Postgres is slow or away the buffer fills and the OLDEST rows are dropped and counted,
 * so recording never slows or refuses a request (brief: "Recording ... never slows or
 * refuses a request"; design.md, "History, incidents, request log").
 */

/** Options of `createBatchWriter`. */
export interface BatchWriterInit<Row> {
  /** Names the writer in logs and metrics (`events`, `snapshots`, `request_log` ...). */
  name: string
  /** Writes one batch, ideally as one statement (see `insertRows`). Rejecting keeps the rows for a retry. */
  write: (rows: readonly Row[]) => Promise<void>
  /** Most rows held, in the buffer and in flight together; default 20 000. */
  capacity?: number
  /** Most rows per write; default 1 000. */
  batchSize?: number
  /** How often the buffer is written when it is not full enough to write at once; default 1 s. */
  flushIntervalMs?: number
  /** First wait after a failed write; doubles per failure up to `maxRetryDelayMs`. Default 500 ms. */
  retryDelayMs?: number
  /** Default 10 s. */
  maxRetryDelayMs?: number
  /** A write that has not settled after this long is abandoned and its rows counted as dropped; default 15 s. */
  writeTimeoutMs?: number
  /** Failures of one batch that is reaching the database but refused (a bad row): after this many it is dropped. Default 3. */
  maxRefusals?: number
  log?: (line: string) => void
}

/** Counters of one writer, for /metrics and /health. */
export interface BatchWriterStats {
  name: string
  /** Rows waiting, including the batch in flight. */
  buffered: number
  written: number
  /** Rows given up: pushed out of a full buffer (`overflow`), refused by the database, or lost to a write that hung. */
  dropped: { overflow: number; refused: number; timed_out: number; closed: number }
  /** Writes that failed (each is retried or dropped). */
  failedWrites: number
  /** True while the last write failed. */
  failing: boolean
}

/** A batched, bounded, off-the-request-path writer. */
export type BatchWriter<Row> = ReturnType<typeof createBatchWriter<Row>>

/** Creates a batch writer. Nothing is written until the first row arrives. */
export function createBatchWriter<Row>(init: BatchWriterInit<Row>) {
  const capacity = Math.max(1, init.capacity ?? 20_000)
  const batchSize = Math.max(1, Math.min(init.batchSize ?? 1_000, capacity))
  const flushIntervalMs = init.flushIntervalMs ?? 1_000
  const firstRetryMs = init.retryDelayMs ?? 500
  const maxRetryMs = init.maxRetryDelayMs ?? 10_000
  const writeTimeoutMs = init.writeTimeoutMs ?? 15_000
  const maxRefusals = init.maxRefusals ?? 3
  const log = init.log ?? (() => {})

  // A ring buffer: `head` is the oldest row, `size` rows follow it.
  const ring: (Row | undefined)[] = new Array(capacity)
  let head = 0
  let size = 0
  let inFlight = 0
  /** Rows of the batch in flight that newer rows pushed out: lost if that write fails. */
  let flightDropped = 0
  const stats: BatchWriterStats = { name: init.name, buffered: 0, written: 0, dropped: { overflow: 0, refused: 0, timed_out: 0, closed: 0 }, failedWrites: 0, failing: false }
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> | undefined
  let retryDelay = firstRetryMs
  let refusals = 0
  let closed = false
  let overflowLogged = false

  /** The oldest buffered row, out of the ring. */
  const shift = (): Row => {
    const row = ring[head] as Row
    ring[head] = undefined
    head = (head + 1) % capacity
    size--
    return row
  }

  const dropOldest = () => {
    shift()
    stats.dropped.overflow++
    if (!overflowLogged) {
      overflowLogged = true
      log(`history ${init.name}: buffer full (${capacity} rows), dropping the oldest rows until the database keeps up`)
    }
  }

  const take = (count: number): Row[] => {
    const rows: Row[] = new Array(count)
    for (let index = 0; index < count; index++) rows[index] = shift()
    return rows
  }

  /** Puts a failed batch back in front (it is older than anything buffered since), less the `lost` rows pushed out meanwhile. */
  const putBack = (rows: Row[], lost: number) => {
    stats.dropped.overflow += lost
    let keep = rows.length - lost
    const room = capacity - size
    if (keep > room) {
      stats.dropped.overflow += keep - room
      keep = room
    }
    // The oldest of the batch make room for the rows buffered since: they are gone.
    for (let index = rows.length - 1; index >= rows.length - keep; index--) {
      head = (head - 1 + capacity) % capacity
      ring[head] = rows[index]
      size++
    }
  }

  const schedule = (delayMs: number) => {
    if (timer !== undefined || closed) return
    timer = setTimeout(() => {
      timer = undefined
      kick()
    }, delayMs).unref()
  }

  const kick = () => {
    if (running !== undefined || size === 0) return
    running = drain().finally(() => {
      running = undefined
      if (size > 0 && !closed) schedule(stats.failing ? retryDelay : size >= batchSize ? 0 : flushIntervalMs)
    })
  }

  /**
   * Writes one batch, then more while a full batch is waiting, until a write fails. A partly
   * filled remainder waits for the next flush interval (or `flush()`), so under steady load
   * batches fill up instead of one statement per handful of rows: each statement and commit
   * costs the database more than a row does.
   */
  const drain = async () => {
    let first = true
    while (size > 0 && (first || size >= batchSize)) {
      first = false
      const rows = take(Math.min(size, batchSize))
      inFlight = rows.length
      const outcome = await writeWithTimeout(rows)
      // Rows of the batch newer rows pushed out meanwhile: lost only if the batch goes back.
      const lost = flightDropped
      inFlight = flightDropped = 0
      if (outcome === 'written') {
        stats.written += rows.length
        if (stats.failing) log(`history ${init.name}: writes landing again`)
        stats.failing = false
        overflowLogged = false
        retryDelay = firstRetryMs
        refusals = 0
        continue
      }
      stats.failedWrites++
      if (outcome === 'timed_out') {
        // It may still land: retrying could write the rows twice, so they are given up instead.
        stats.dropped.timed_out += rows.length
        stats.failing = true
        return
      }
      if (outcome.reachable && ++refusals >= maxRefusals) {
        stats.dropped.refused += rows.length
        refusals = 0
        log(`history ${init.name}: the database refused a batch of ${rows.length} rows ${maxRefusals} times; dropped it: ${outcome.message}`)
        continue
      }
      if (!stats.failing) log(`history ${init.name}: write failed, keeping the rows and retrying: ${outcome.message}`)
      stats.failing = true
      putBack(rows, lost)
      retryDelay = Math.min(retryDelay * 2, maxRetryMs)
      return
    }
  }

  const writeWithTimeout = async (rows: Row[]): Promise<'written' | 'timed_out' | { reachable: boolean; message: string }> => {
    try {
      return await within(init.write(rows).then(() => 'written' as const), writeTimeoutMs, 'timed_out' as const)
    } catch (error) {
      return { reachable: isRefusal(error), message: error instanceof Error ? error.message : String(error) }
    }
  }
  /** Rows that left for good but at close: the mark `flush` waits for. */
  const settled = () => stats.written + stats.dropped.overflow + stats.dropped.refused + stats.dropped.timed_out

  return {
    /** Adds a row; never blocks, never throws. When the buffer is full the oldest row is dropped. */
    add(row: Row): void {
      if (closed) {
        stats.dropped.closed++
        return
      }
      if (size + inFlight - flightDropped >= capacity) {
        // The oldest rows are those in flight: mark one lost (if that write fails), else drop the oldest buffered.
        if (inFlight - flightDropped > 0) flightDropped++
        else dropOldest()
      }
      ring[(head + size) % capacity] = row
      size++
      if (stats.failing) schedule(retryDelay)
      else if (size >= batchSize) kick()
      else schedule(flushIntervalMs)
    },
    /** Writes everything buffered so far (one batch after another); resolves when done or given up. */
    async flush(): Promise<void> {
      const until = settled() + size + inFlight
      // Keep writing while rows buffered before this call are still waiting and writes succeed.
      for (;;) {
        if (running !== undefined) await running
        if (size === 0 || settled() >= until) return
        clearTimeout(timer)
        timer = undefined
        const before = stats.failedWrites
        kick()
        await running
        if (stats.failedWrites > before) return
      }
    },
    stats(): BatchWriterStats {
      return { ...stats, buffered: size + inFlight - flightDropped, dropped: { ...stats.dropped } }
    },
    /** Flushes what it can within `timeoutMs` (default 5 s), then stops; rows left are counted as dropped. */
    async close(options: { timeoutMs?: number } = {}): Promise<void> {
      if (closed) return
      await within(this.flush(), options.timeoutMs ?? 5_000, undefined)
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      stats.dropped.closed += size
      take(size)
    },
  }
}

/**
 * True when the database answered and refused (a SQLSTATE outside the "connection" and
 * "server going away" classes): retrying the same rows cannot help forever.
 */
function isRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false
  return !(code.startsWith('08') || code.startsWith('57') || code.startsWith('53'))
}

/** `promise`, or `fallback` once `ms` have passed (the timer never holds the process open). */
function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms).unref()))
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
