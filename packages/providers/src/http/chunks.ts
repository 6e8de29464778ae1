/**
 * Chat.completion.chunk texts for a translated stream: the fields every chunk repeats serialized
 * once, and the usage chunk dropped unless the caller asked for it, as OpenAI does.
 */
import type { OpenAIUsage } from '../anthropic/finish.ts'

/** What every chunk of a translated stream reports: the answer's id, the model the caller asked for, when it was created. */
export interface StreamChunkInit {
  id: string
  model: string
  createdSeconds: number
}

/** Writes the chunks of one streamed answer. */
export type ChunkWriter = ReturnType<typeof chunkWriter>

/** A chunk writer: `delta` writes a chunk with one choice (`finishReason` on the last one), `usage` the closing `choices: []` chunk. */
export function chunkWriter(id: string, model: string, createdSeconds: number) {
  const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${createdSeconds},"model":${JSON.stringify(model)},`
  return {
    delta: (delta: Record<string, unknown>, finishReason: string | null = null) => `${head}"choices":[${JSON.stringify({ index: 0, delta, logprobs: null, finish_reason: finishReason })}]}`,
    usage: (usage: OpenAIUsage) => `${head}"choices":[],"usage":${JSON.stringify(usage)}}`,
  }
}

/** The chunks as the caller asked: the usage chunk only with `stream_options.include_usage`. */
export function asRequested(chunks: AsyncIterable<string>, streamOptions: unknown): AsyncIterable<string> {
  return (streamOptions as { include_usage?: unknown } | undefined)?.include_usage === true ? chunks : withoutUsageChunk(chunks)
}

async function* withoutUsageChunk(chunks: AsyncIterable<string>): AsyncGenerator<string> {
  for await (const chunk of chunks) {
    if (!chunk.includes('"choices":[]')) yield chunk
  }
}
