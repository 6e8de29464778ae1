/** The Responses API upstream (`POST /v1/responses` at OpenAI, `/openai/v1/responses` at Azure). */
import { jsonAnswer, withBody, type AnswerContext, type ChatRequest, type Dialect } from '../dialects/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import { parseResponsesBody, responseEvents, responseObject } from './body.ts'

/** `chat` with Responses bodies: same authentication, faults and rate-limit answers. */
export function responsesDialect(chat: Dialect): Dialect {
  return {
    ...chat,
    parse: (body, _deployment, _apiVersion, requestId) =>
      parseResponsesBody(body, (message, param, code) => jsonAnswer(400, ['x-request-id', requestId], openaiErrorBody(message, 'invalid_request_error', param, code))),
    complete(request, reply, context) {
      const answer = chat.complete(request, reply, context)
      return withBody(answer, JSON.stringify(responseObject(request, reply, idsOf(request, context), Math.floor(context.now / 1000), true)))
    },
    stream(request, reply, context) {
      const answer = chat.stream(request, reply, context)
      return { headers: answer.headers, chunks: responseEvents(request, reply, idsOf(request, context), Math.floor(context.now / 1000)) }
    },
  }
}

function idsOf(request: ChatRequest, context: AnswerContext) {
  return { response: context.ids.next('resp_'), item: context.ids.next(request.tool === undefined ? 'msg_' : 'fc_'), call: context.ids.next('call_') }
}
