/**
 * The primary of a node with workers (issue 38, `--workers N`): it owns the port and node:cluster
 * hands each connection to a worker in turn (Node 20 has no `reusePort`; a shared accept piles
 * connections on one worker). It serves nothing: it relays each worker's news to its siblings,
 * keeps a copy of the node's state for a worker that starts later, routes questions to the fleet
 * worker, restarts a worker that dies, and stops them all.
 */
import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'
import { createHolds, type RateLimitBackoff, type TrialEntry } from '@switchboard/routing'
import { atMost } from '../boot/shutdown.ts'
import { FLEET_WORKER, isWorkerMessage, type News, type NodeState, type Question, type SessionAsked, type SessionNews, type WorkerMessage } from './protocol.ts'

type Reply = Extract<WorkerMessage, { sb: 'reply' }>

export interface PrimaryInit {
  workers: number
  logger: Logger
  /** Called once every worker first answers; the node is up. */
  onReady(url: string): void
  /** Called when the node cannot run: a worker failed its first start, or kept dying. */
  onFailed(reason: string): void
}

/** Sessions the primary remembers for workers that start later (as many as a worker does). */
const MAX_SESSIONS = 100_000
/** A worker that dies more often than this within RESTART_WINDOW_MS is not started again. */
const MAX_RESTARTS = 5
const RESTART_WINDOW_MS = 60_000
/** How long /metrics waits for a worker's share. */
const GATHER_MS = 1_500

/** Forks the workers and runs the node's hub until `stop`, which stops every worker (each drains as on SIGTERM) and resolves once all exited or `boundMs` passed. */
export function startPrimary(init: PrimaryInit): { stop(boundMs: number): Promise<void> } {
  const { logger } = init
  cluster.setupPrimary({ serialization: 'advanced' })
  const state = createStateCopy()
  const workers = new Map<number, Worker>()
  const ready = new Set<number>()
  const restarts: number[] = []
  let everyoneReady = false
  let stopping = false
  // Questions the primary asked a worker (relayed for another, or its own), by the id it asked under.
  let nextId = 0
  const asked = new Map<number, { worker: number; answered(reply: Reply): void }>()
  const ask = (worker: number, question: Question, payload: unknown, answered: (reply: Reply) => void) => {
    const id = ++nextId
    asked.set(id, { worker, answered })
    send(worker, { sb: 'ask', id, question, payload })
    return id
  }

  const send = (index: number, message: WorkerMessage) => {
    const worker = workers.get(index)
    if (worker?.isConnected()) worker.send(message)
  }

  // The first worker's first start listens at once (/health says "starting"); every other once wired.
  const fork = (index: number, listen: 'early' | 'late' = 'late') => {
    const worker = cluster.fork({ SWITCHBOARD_WORKER_INDEX: String(index), SWITCHBOARD_WORKER_COUNT: String(init.workers), SWITCHBOARD_WORKER_LISTEN: listen })
    workers.set(index, worker)
    worker.on('message', (message: unknown) => {
      if (isWorkerMessage(message)) receive(index, message)
    })
    worker.on('exit', (code, signal) => exited(index, worker, code, signal))
    // A message sent to a worker that just died, before its channel's end is read, fails with EPIPE as an 'error' event:
    // unheard, it would end the primary and close the node's port. The worker's 'exit' restarts it.
    worker.on('error', (error: Error) => logger.debug({ worker: index, err: error.message }, `a message to worker ${index} was not delivered`))
  }

  const receive = (from: number, message: WorkerMessage) => {
    switch (message.sb) {
      case 'news':
        state.apply(message.news)
        if (message.news.kind === 'history') send(FLEET_WORKER, message)
        else for (const index of workers.keys()) if (index !== from) send(index, message)
        return
      case 'ask': {
        if (message.question === 'metrics') return gather(from, message.id)
        if (message.question === 'state') return send(from, { sb: 'reply', id: message.id, ok: true, value: state.snapshot(Date.now()) })
        if (message.question === 'session') return send(from, { sb: 'reply', id: message.id, ok: true, value: state.session(message.payload as SessionAsked) })
        if (!ready.has(FLEET_WORKER) || from === FLEET_WORKER) return send(from, { sb: 'reply', id: message.id, ok: false, error: 'the fleet worker is not running' })
        // The fleet worker's answer goes back to the asker under the asker's id.
        ask(FLEET_WORKER, message.question, message.payload, (reply) => send(from, { ...reply, id: message.id }))
        return
      }
      case 'reply': {
        const question = asked.get(message.id)
        asked.delete(message.id)
        question?.answered(message)
        return
      }
      case 'ready':
        ready.add(from)
        if (!everyoneReady && ready.size === init.workers) {
          everyoneReady = true
          init.onReady(message.url)
        }
    }
  }

  // /metrics on any worker: every ready worker's metrics, for the asker to add up.
  const gather = (from: number, askerId: number) => {
    const answers = [...ready].map(
      (index) =>
        new Promise<unknown>((resolve) => {
          const id = ask(index, 'metrics', null, (reply) => {
            clearTimeout(timer)
            resolve(reply.ok ? reply.value : null)
          })
          const timer = setTimeout(() => {
            asked.delete(id)
            resolve(null)
          }, GATHER_MS)
        }),
    )
    void Promise.all(answers).then((values) => send(from, { sb: 'reply', id: askerId, ok: true, value: values.filter((value) => value !== null) }))
  }

  const exited = (index: number, worker: Worker, code: number | null, signal: string | null) => {
    if (workers.get(index) !== worker) return
    ready.delete(index)
    // Questions the worker took with it: their askers fall back on their own answers.
    for (const [id, question] of asked) {
      if (question.worker !== index) continue
      asked.delete(id)
      question.answered({ sb: 'reply', id, ok: false, error: `worker ${index} exited` })
    }
    if (stopping) return
    if (!everyoneReady) {
      init.onFailed(`worker ${index} exited during the start (${signal ?? `code ${code}`})`)
      return
    }
    const now = Date.now()
    restarts.push(now)
    while (restarts.length > 0 && restarts[0]! < now - RESTART_WINDOW_MS) restarts.shift()
    if (restarts.length > MAX_RESTARTS) {
      init.onFailed(`workers died ${restarts.length} times within ${RESTART_WINDOW_MS / 1000} s`)
      return
    }
    logger.warn({ worker: index, code, signal }, `worker ${index} exited (${signal ?? `code ${code}`}); starting another`)
    fork(index)
  }

  for (let index = 1; index <= init.workers; index++) fork(index, index === FLEET_WORKER ? 'early' : 'late')

  return {
    async stop(boundMs) {
      stopping = true
      const running = [...workers.values()].filter((worker) => !worker.isDead())
      const exits = running.map((worker) => new Promise<void>((resolve) => worker.once('exit', () => resolve())))
      for (const worker of running) worker.process.kill('SIGTERM')
      await atMost(boundMs, Promise.all(exits))
      for (const worker of running) if (!worker.isDead()) worker.process.kill('SIGKILL')
    },
  }
}

/** The node's state as the primary copies it from the workers' news: what a worker starting now needs. */
export function createStateCopy() {
  const holds = createHolds({ nodeId: 'primary', random: Math.random })
  const backoffs = new Map<string, RateLimitBackoff>()
  const trials = new Map<string, TrialEntry>()
  const sessions = new Map<string, SessionNews>()
  let settings: NodeState['settings'] = null
  const route = (entry: { provider: string; keyId: string; model: string }) => `${entry.provider}\u0000${entry.keyId}\u0000${entry.model}`
  return {
    apply(news: News): void {
      switch (news.kind) {
        case 'holds':
          holds.merge(news.entries, Date.now())
          return
        case 'backoff': {
          const known = backoffs.get(route(news.backoff))
          if (known === undefined || known.untilMs < news.backoff.untilMs) backoffs.set(route(news.backoff), news.backoff)
          return
        }
        case 'trials':
          for (const entry of news.entries) trials.set(route(entry), entry)
          return
        case 'sessions':
          for (const session of news.sessions) {
            const id = `${session.sessionId}\u0000${session.model}`
            sessions.delete(id)
            sessions.set(id, session)
            if (sessions.size > MAX_SESSIONS) sessions.delete(sessions.keys().next().value!)
          }
          return
        case 'settings':
          settings = news.settings
      }
    },
    /** A session's route as a worker last told it: news read before the question, each worker's channel in its order. */
    session(asked: SessionAsked): SessionNews | null {
      return sessions.get(`${asked.sessionId}\u0000${asked.model}`) ?? null
    },
    snapshot(now: number): NodeState {
      holds.collect(now)
      for (const [id, backoff] of backoffs) if (backoff.untilMs <= now) backoffs.delete(id)
      return { holds: holds.entries(), backoffs: [...backoffs.values()], trials: [...trials.values()], sessions: [...sessions.values()], settings }
    },
  }
}
