/**
 * What a node started, stopped in reverse order (issue 39, item 2): each part says how it stops
 * as it starts, so the shutdown and a failed start's undo are one list read backwards, each stop
 * a bounded, named step (shutdown.ts).
 */
import type { Logger } from 'pino'
import { shutdownStep } from './shutdown.ts'

interface Part {
  name: string
  stop(): unknown
  boundMs?: number
}

export class Parts {
  private readonly started: Part[] = []

  constructor(private readonly logger: Logger) {}

  /** Records a part that has started; `stop` lets go of it (at most `boundMs`, default 3 s). */
  add(name: string, stop: () => unknown, boundMs?: number): void {
    this.started.push({ name, stop, ...(boundMs !== undefined ? { boundMs } : {}) })
  }

  /** Stops every part started so far, the newest first; each at most its bound. */
  async stop(): Promise<void> {
    for (const part of this.started.splice(0).reverse()) {
      const stopping = async () => {
        try {
          await part.stop()
        } catch (error) {
          this.logger.warn({ err: error, step: part.name }, `shutdown: ${part.name} failed`)
        }
      }
      await shutdownStep(this.logger, part.name, stopping, part.boundMs)
    }
  }

  /** The names of the parts started so far, in the order they will stop. */
  get order(): string[] {
    return this.started.map((part) => part.name).reverse()
  }
}
