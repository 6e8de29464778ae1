/** OpenAI-shaped SSE streams: the chunk JSON of each `data:` line, up to `[DONE]`. */
import { parseSse } from './sse.ts'

/** An upstream's in-band stream error (`data: {"error": ...}`), which ends the stream. */
export class UpstreamStreamError extends Error {
  readonly code = 'upstream_stream_error'
  constructor(
    message: string,
    readonly providerCode: string | null,
  ) {
    super(message)
    this.name = 'UpstreamStreamError'
  }
}

/** Yields each chunk's JSON text; stops at `[DONE]`; throws UpstreamStreamError on an error event. */
export async function* openAiEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  for await (const event of parseSse(body)) {
    const data = event.data
    if (data === '[DONE]') return
    if (event.event === 'error' || data.startsWith('{"error"')) {
      let message = data
      let code: string | null = null
      try {
        const parsed = JSON.parse(data) as { error?: { message?: unknown; code?: unknown; type?: unknown } }
        if (typeof parsed.error?.message === 'string') message = parsed.error.message
        const providerCode = parsed.error?.code ?? parsed.error?.type
        if (typeof providerCode === 'string') code = providerCode
      } catch {
        // Not JSON: keep the raw text as the message.
      }
      throw new UpstreamStreamError(message, code)
    }
    yield data
  }
}
