/**
 * The Responses API upstream (`POST /v1/responses` at OpenAI, `/openai/v1/responses` at
 * Azure): the provider's own keys, headers, faults and rate limits, with Responses bodies
 * and events. Built from the chat dialect of the same provider.
 */
import type { Dialect } from '../dialects/dialect.ts'
import { jsonAnswer } from '../dialects/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import { parseResponsesBody, responseBody, responseEvents } from './body.ts'

/** `chat` with Responses bodies: same authentication, faults and rate-limit answers. */
export function responsesDialect(chat: Dialect): Dialect {
  return {
    ...chat,
    parse: (body, _deployment, _apiVersion, requestId) =>
      parseResponsesBody(body, (message, param, code) => jsonAnswer(400, ['x-request-id', requestId], openaiErrorBody(message, 'invalid_request_error', param, code))),
    complete(request, reply, context) {
      const answer = chat.complete(request, reply, context)
      const ids = { response: context.ids.next('resp_'), item: context.ids.next(request.tool === undefined ? 'msg_' : 'fc_'), call: context.ids.next('call_') }
      return withBody(answer, responseBody(request, reply, ids, Math.floor(context.now / 1000)))
    },
    stream(request, reply, context) {
      const answer = chat.stream(request, reply, context)
      const ids = { response: context.ids.next('resp_'), item: context.ids.next(request.tool === undefined ? 'msg_' : 'fc_'), call: context.ids.next('call_') }
      return { headers: answer.headers, chunks: responseEvents(request, reply, ids, Math.floor(context.now / 1000)) }
    },
  }
}

/** The chat answer's status and headers with another JSON body. */
export function withBody(answer: { status: number; headers: string[] }, body: string): { status: number; headers: string[]; body: string } {
  const headers: string[] = []
  for (let index = 0; index + 1 < answer.headers.length; index += 2) {
    if (answer.headers[index]!.toLowerCase() === 'content-length') continue
    headers.push(answer.headers[index]!, answer.headers[index + 1]!)
  }
  headers.push('content-length', String(Buffer.byteLength(body)))
  return { status: answer.status, headers, body }
}
