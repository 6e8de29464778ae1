/**
 * What a node started, stopped in reverse order (issue 39, item 2): each part says how it stops
 * as it starts, so the shutdown and a failed start's undo are one list read backwards, each stop
 * a bounded, named step (shutdown.ts).
 */
import type { Logger } from 'pino'
import { shutdownStep } from './shutdown.ts'

export class Parts {
  private readonly started: { name: string; stop(): unknown; boundMs?: number }[] = []

  constructor(private readonly logger: Logger) {}

  /** Records a part that has started; `stop` lets go of it (at most `boundMs`, default 3 s). */
  add(name: string, stop: () => unknown, boundMs?: number): void {
    this.started.push({ name, stop, boundMs })
  }

  /** Stops every part started so far, the newest first; each at most its bound. */
  async stop(): Promise<void> {
    for (const part of this.started.splice(0).reverse()) await shutdownStep(this.logger, part.name, async () => part.stop(), part.boundMs)
  }
}
