/**
 * Chat.completion.chunk texts for a translated stream: the fields every chunk repeats serialized
 * once, and the usage chunk dropped unless the caller asked for it, as OpenAI does.
 */
import type { OpenAIUsage } from '../anthropic/finish.ts'

/** Writes the chunks of one streamed answer. */
export interface ChunkWriter {
  /** A chunk with one choice: `delta`, and `finishReason` on the last one. */
  delta(delta: Record<string, unknown>, finishReason?: string | null): string
  /** The closing `choices: []` chunk with the answer's usage. */
  usage(usage: OpenAIUsage): string
}

/** What every chunk of a translated stream reports: the answer's id, the model the caller asked for, when it was created. */
export interface StreamChunkInit {
  id: string
  model: string
  createdSeconds: number
}

/** A chunk writer for the answer `id` to a request for `model`, created at `createdSeconds`. */
export function chunkWriter(id: string, model: string, createdSeconds: number): ChunkWriter {
  const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${createdSeconds},"model":${JSON.stringify(model)},`
  return {
    delta: (delta, finishReason = null) => `${head}"choices":[${JSON.stringify({ index: 0, delta, logprobs: null, finish_reason: finishReason })}]}`,
    usage: (usage) => `${head}"choices":[],"usage":${JSON.stringify(usage)}}`,
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
