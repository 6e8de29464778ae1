/**
 * What a node started, to let go of in reverse order (issue 39, item 2): each part of the
 * wiring says how it stops as it starts, so the shutdown and a failed start's undo are the same
 * list read backwards, computed rather than hand-ordered. Each stop is a bounded, named step
 * (shutdown.ts): one that hangs or fails is logged and left behind, and the next one runs.
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
