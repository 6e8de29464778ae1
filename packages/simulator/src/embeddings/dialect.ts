/** The embeddings upstream (`POST /v1/embeddings`, Azure's deployment `/embeddings`): the same input always gives the same vector. */
import { jsonAnswer, withBody, type Dialect } from '../dialects/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import { estimateTokens } from '../reply/content.ts'

/** Dimensions of a simulated vector unless the request asks for fewer. */
const DIMENSIONS = 8

function inputsOf(input: unknown): string[] | undefined {
  if (typeof input === 'string') return [input]
  if (!Array.isArray(input) || input.length === 0) return undefined
  return input.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)))
}

/** A unit vector derived from the text (FNV-1a seeded per dimension). */
function vectorOf(text: string, dimensions: number): number[] {
  const values: number[] = []
  for (let dimension = 0; dimension < dimensions; dimension++) {
    let hash = 0x811c9dc5 ^ dimension
    for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193)
    values.push(((hash >>> 0) / 0xffffffff) * 2 - 1)
  }
  const norm = Math.hypot(...values) || 1
  return values.map((value) => Number((value / norm).toFixed(6)))
}

/** `chat` with embeddings bodies: same authentication, faults and rate-limit answers. */
export function embeddingsDialect(chat: Dialect): Dialect {
  const inputs = new WeakMap<object, { texts: string[]; dimensions: number }>()
  return {
    ...chat,
    parse(body, deployment, apiVersion, requestId) {
      const model = deployment ?? body.model
      const refuse = (message: string, param: string) => jsonAnswer(400, ['x-request-id', requestId], openaiErrorBody(message, 'invalid_request_error', param, null))
      if (typeof model !== 'string' || model.length === 0) return refuse('you must provide a model parameter', 'model')
      const texts = inputsOf(body.input)
      if (texts === undefined) return refuse("'input' is a required property", 'input')
      const request = { model, stream: false, promptTokens: estimateTokens(texts.join('').length), maxTokens: undefined, tool: undefined, apiVersion }
      inputs.set(request, { texts, dimensions: typeof body.dimensions === 'number' && body.dimensions > 0 ? Math.min(body.dimensions, 64) : DIMENSIONS })
      return request
    },
    complete(request, reply, context) {
      const answer = chat.complete(request, reply, context)
      const asked = inputs.get(request) ?? { texts: [''], dimensions: DIMENSIONS }
      const data = asked.texts.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text, asked.dimensions) }))
      return withBody(answer, JSON.stringify({ object: 'list', data, model: request.model, usage: { prompt_tokens: request.promptTokens, total_tokens: request.promptTokens } }))
    },
  }
}
