/** A worker's end of the channel to its primary (issue 38): news, and questions to the fleet worker or the primary (protocol.ts). */
import { FLEET_WORKER, isWorkerMessage, type News, type Question, type SessionNews, type HistoryForward, type WorkerMessage } from './protocol.ts'
import type { AttemptOutcome } from '@switchboard/routing'

/** How long per-request news (finished attempts, sessions, history) waits to travel in one message. */
const BATCH_MS = 50
/** A question not answered within this is answered here instead. */
const ASK_TIMEOUT_MS = 2_000

/** A worker's link to its primary. */
export type Siblings = NonNullable<ReturnType<typeof connectSiblings>>

/** This process's link to its primary; null when it is not a worker. */
export function connectSiblings(env: NodeJS.ProcessEnv = process.env) {
  const index = Number(env.SWITCHBOARD_WORKER_INDEX)
  if (!Number.isInteger(index) || index < 1 || process.send === undefined) return null
  const post = (message: WorkerMessage) => {
    if (process.connected) process.send!(message)
  }
  let onNews: (news: News) => void = () => {}
  let onQuestion: ((question: Question, payload: unknown) => Promise<unknown>) | null = null
  let nextId = 0
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void; timer: NodeJS.Timeout }>()

  const listener = (message: unknown) => {
    if (!isWorkerMessage(message)) return
    switch (message.sb) {
      case 'news':
        onNews(message.news)
        return
      case 'reply': {
        const waiting = pending.get(message.id)
        if (waiting === undefined) return
        pending.delete(message.id)
        clearTimeout(waiting.timer)
        if (message.ok) waiting.resolve(message.value)
        else waiting.reject(new Error(message.error))
        return
      }
      case 'ask': {
        const { id } = message
        const answering = onQuestion === null ? Promise.reject(new Error('not answering yet')) : onQuestion(message.question, message.payload)
        answering.then(
          (value) => post({ sb: 'reply', id, ok: true, value }),
          (error: unknown) => post({ sb: 'reply', id, ok: false, error: error instanceof Error ? error.message : String(error) }),
        )
      }
    }
  }
  process.on('message', listener)

  let outcomes: AttemptOutcome[] = []
  let sessions: SessionNews[] = []
  let events: HistoryForward[] = []
  let timer: NodeJS.Timeout | null = null
  const flush = () => {
    timer = null
    if (outcomes.length > 0) post({ sb: 'news', news: { kind: 'outcomes', outcomes } })
    if (sessions.length > 0) post({ sb: 'news', news: { kind: 'sessions', sessions } })
    if (events.length > 0) post({ sb: 'news', news: { kind: 'history', events } })
    outcomes = []
    sessions = []
    events = []
  }
  const soon = () => {
    if (timer !== null) return
    timer = setTimeout(flush, BATCH_MS)
    timer.unref()
  }

  return {
    /** This worker's number, from 1. */
    index,
    /** True for the worker that joins the fleet, writes history and answers questions. */
    fleetWorker: index === FLEET_WORKER,
    tell: (news: News) => post({ sb: 'news', news }),
    /** Per-request news: sent with others of its kind every BATCH_MS. */
    outcome(outcome: AttemptOutcome) {
      outcomes.push(outcome)
      soon()
    },
    /** `now`: told at once, not with the next batch. */
    session(session: SessionNews, now = false) {
      if (now) return post({ sb: 'news', news: { kind: 'sessions', sessions: [session] } })
      sessions.push(session)
      soon()
    },
    history(event: HistoryForward) {
      events.push(event)
      soon()
    },
    onNews: (handler: (news: News) => void) => void (onNews = handler),
    ask(question: Question, payload: unknown): Promise<unknown> {
      const id = ++nextId
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id)
          reject(new Error(`no answer to "${question}" within ${ASK_TIMEOUT_MS / 1000} s`))
        }, ASK_TIMEOUT_MS)
        timer.unref()
        pending.set(id, { resolve, reject, timer })
        post({ sb: 'ask', id, question, payload })
      })
    },
    answer: (handler: (question: Question, payload: unknown) => Promise<unknown>) => void (onQuestion = handler),
    ready: (url: string) => post({ sb: 'ready', url }),
    close(): void {
      if (timer !== null) clearTimeout(timer)
      flush()
      process.off('message', listener)
      for (const waiting of pending.values()) {
        clearTimeout(waiting.timer)
        waiting.reject(new Error('the worker is stopping'))
      }
      pending.clear()
    },
  }
}
