/** A small typed event emitter whose listeners can never throw into the caller. */

/** Emits typed events (`Events`: event name -> the arguments its listeners receive); a throwing listener is reported, not propagated. */
export class Emitter<Events extends Record<string, unknown[]>> {
  private readonly listeners = new Map<keyof Events, Set<(...args: unknown[]) => void>>()

  constructor(private readonly onListenerError: (event: string, error: unknown) => void) {}

  /** Adds a listener; returns the function that removes it. */
  on<Name extends keyof Events>(event: Name, listener: (...args: Events[Name]) => void): () => void {
    let set = this.listeners.get(event)
    if (set === undefined) this.listeners.set(event, (set = new Set()))
    // Stored untyped: the map holds listeners of every event; `on` and `emit` keep the pairing typed.
    const stored = listener as unknown as (...args: unknown[]) => void
    set.add(stored)
    return () => void set.delete(stored)
  }

  /** Calls every listener of `event` in the order they were added. */
  emit<Name extends keyof Events>(event: Name, ...args: Events[Name]): void {
    const set = this.listeners.get(event)
    if (set === undefined) return
    for (const listener of [...set]) {
      try {
        listener(...args)
      } catch (error) {
        this.onListenerError(String(event), error)
      }
    }
  }
}
