/** Test helpers for the stream translations: chunks in, parsed events out. */

/** The JSON text of each chunk, as an upstream stream yields them. */
export async function* chunksOf(chunks: unknown[]): AsyncGenerator<string> {
  for (const chunk of chunks) yield JSON.stringify(chunk)
}

/** Every event of a translated stream, parsed. */
export async function collectEvents(events: AsyncIterable<string>): Promise<Record<string, any>[]> {
  const out: Record<string, any>[] = []
  for await (const event of events) out.push(JSON.parse(event))
  return out
}
