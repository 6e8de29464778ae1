/**
 * Rows kept as bytes outside the JS heap while they wait for their write (up to a flush
 * interval): a row held as a string or an object would survive a scavenge or two and be copied
 * by the GC, paid per request. Each row is encoded at once into a slab (a Buffer outside the
 * heap) and the writer's ring holds only its slot, a small integer.
 *
 * A slab counts its live rows and is recycled once it has none and is not the one being filled.
 * Released out of order is fine (the writer drops buffered rows while an older batch is in flight).
 */

/** Default slab size: about 700 request log rows. */
const SLAB_BYTES = 1 << 20
/** The largest row `encode` takes (a request log row with content on is well under 1 MB). */
const MAX_ROW_BYTES = 64 << 20
/** Empty slabs kept for reuse instead of freed (allocating one costs a page-fault storm, not a GC). */
const SPARE_SLABS = 4

/** Bytes of rows, each addressed by a slot (a small integer: the writer's ring holds no object per row). */
export class RowArena<Sink extends ByteSink> {
  private readonly slabs: (Buffer | undefined)[] = []
  /** Live rows per slab. */
  private readonly live: number[] = []
  private readonly spare: Buffer[] = []
  /** The slab being filled, and where its free space starts. */
  private current = -1
  private offset = 0
  /** Per slot: its slab (-1 when free), start and length. Arrays of small integers, so a row adds no heap object. */
  private readonly slabOf: number[] = []
  private readonly startOf: number[] = []
  private readonly lengthOf: number[] = []
  private readonly free: number[] = []
  private rows = 0
  private bytes = 0

  /** `sink` is what `encode` writes rows through (a BinarySink for COPY's binary format); `slabBytes` the bytes per slab. */
  constructor(
    private readonly sink: Sink,
    private readonly slabBytes = SLAB_BYTES,
  ) {}

  /** Rows held, and their bytes. */
  get size(): { rows: number; bytes: number } {
    return { rows: this.rows, bytes: this.bytes }
  }

  /**
   * Encodes one row (`value`) straight into the slab being filled through the sink (a plain
   * function, so no closure is made per row), with no string built for it. When the slab's room
   * runs out the row is encoded again into a fresh slab; a row larger than a slab gets a slab of
   * its own, doubled until it fits (up to `MAX_ROW_BYTES`). Returns its slot.
   */
  encode<Value>(encode: (sink: Sink, value: Value) => void, value: Value): number {
    if (this.current >= 0) {
      const slot = this.encodeHere(encode, value)
      if (slot >= 0) return slot
    }
    for (let size = this.slabBytes; size <= MAX_ROW_BYTES; size *= 2) {
      // A slab of the usual size that was empty has just been tried.
      if (size === this.slabBytes && this.current >= 0 && this.offset === 0) continue
      this.nextSlab(size)
      const slot = this.encodeHere(encode, value)
      if (slot >= 0) return slot
    }
    throw new Error(`row arena: a row larger than ${MAX_ROW_BYTES} bytes`)
  }

  /** Encodes a row at the free space of the slab being filled; -1 when it does not fit there. */
  private encodeHere<Value>(encode: (sink: Sink, value: Value) => void, value: Value): number {
    const sink = this.sink
    sink.reset(this.slabs[this.current] as Buffer, this.offset)
    try {
      encode(sink, value)
    } catch (error) {
      if (error !== FULL) throw error
      return -1
    }
    return this.take(sink.position - this.offset)
  }

  /** Gives the bytes just written at the slab's free space a slot. */
  private take(written: number): number {
    const slot = this.free.pop() ?? this.slabOf.length
    this.slabOf[slot] = this.current
    this.startOf[slot] = this.offset
    this.lengthOf[slot] = written
    this.offset += written
    this.live[this.current] = (this.live[this.current] as number) + 1
    this.rows++
    this.bytes += written
    return slot
  }

  /** The bytes of `slots`, in that order, copied into one Buffer after `room` bytes and before `tail` bytes left for the caller. */
  concat(slots: readonly number[], room = 0, tail = 0): Buffer {
    let total = room + tail
    for (const slot of slots) total += this.lengthOf[slot] as number
    const out = Buffer.allocUnsafe(total)
    let at = room
    let index = 0
    while (index < slots.length) {
      // Rows added one after another sit one after another: copy each run at once.
      const first = slots[index++] as number
      const slab = this.slabOf[first] as number
      const start = this.startOf[first] as number
      let end = start + (this.lengthOf[first] as number)
      for (let next = slots[index]; next !== undefined && this.slabOf[next] === slab && this.startOf[next] === end; next = slots[++index]) end += this.lengthOf[next] as number
      at += (this.slabs[slab] as Buffer).copy(out, at, start, end)
    }
    return out
  }

  /** Gives a slot back (again is harmless); its slab is recycled when its last row goes. */
  release(slot: number): void {
    const slab = this.slabOf[slot] ?? -1
    if (slab < 0) return
    this.slabOf[slot] = -1
    this.free.push(slot)
    this.rows--
    this.bytes -= this.lengthOf[slot] as number
    const left = (this.live[slab] as number) - 1
    this.live[slab] = left
    if (left === 0 && slab !== this.current) this.retire(slab)
  }

  /** Starts filling a new slab of `size` bytes (a spare one when it is the usual size); the previous one goes once empty. */
  private nextSlab(size: number): void {
    const previous = this.current
    const buffer = (size === this.slabBytes ? this.spare.pop() : undefined) ?? Buffer.allocUnsafeSlow(size)
    let index = this.slabs.indexOf(undefined)
    if (index < 0) index = this.slabs.length
    this.slabs[index] = buffer
    this.live[index] = 0
    this.current = index
    this.offset = 0
    if (previous >= 0 && this.live[previous] === 0) this.retire(previous)
  }

  private retire(slab: number): void {
    const buffer = this.slabs[slab] as Buffer
    this.slabs[slab] = undefined
    if (buffer.length === this.slabBytes && this.spare.length < SPARE_SLABS) this.spare.push(buffer)
  }
}

/** Thrown by a `ByteSink` that has no room left: the arena retries in a fresh slab. */
export const FULL = new Error('row arena: slab full')

/**
 * Writes ASCII straight into a slab, a byte per character, so a row is encoded without a
 * string of its own. `ascii`/`plain` copy what they can and return false (writing nothing) for
 * text that needs escaping; `utf8` writes any string as it is.
 */
export class ByteSink {
  protected buffer: Buffer = Buffer.alloc(0)
  protected at = 0

  reset(buffer: Buffer, at: number): void {
    this.buffer = buffer
    this.at = at
  }

  get position(): number {
    return this.at
  }

  /** Text known to be ASCII (constants, numbers, ISO times). */
  ascii(text: string): void {
    const length = text.length
    let at = this.at
    if (at + length > this.buffer.length) throw FULL
    const buffer = this.buffer
    for (let index = 0; index < length; index++) buffer[at++] = text.charCodeAt(index)
    this.at = at
  }

  /**
   * Copies `text` if every character is printable ASCII other than `"` and `\\` (the same in
   * JSON, COPY text and as a quoted array or JSON element), in double quotes when `quote`,
   * lowercased when `lower`; else writes nothing and returns false.
   */
  plain(text: string, quote = false, lower = false): boolean {
    const length = text.length
    const start = this.at
    if (start + length + 2 > this.buffer.length) throw FULL
    const buffer = this.buffer
    let at = start
    if (quote) buffer[at++] = 0x22
    for (let index = 0; index < length; index++) {
      let code = text.charCodeAt(index)
      if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false
      if (lower && code >= 0x41 && code <= 0x5a) code += 0x20
      buffer[at++] = code
    }
    if (quote) buffer[at++] = 0x22
    this.at = at
    return true
  }

  /** Goes back to `position` (a `position` read before), forgetting what was written since (bench/lib/request-log-text.ts). */
  rewind(position: number): void {
    this.at = position
  }

  /** Any text, as UTF-8. */
  utf8(text: string): void {
    const buffer = this.buffer
    if (this.at + text.length * 3 > buffer.length && this.at + Buffer.byteLength(text, 'utf8') > buffer.length) throw FULL
    this.at += buffer.write(text, this.at, 'utf8')
  }
}
