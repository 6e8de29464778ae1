import type { IncomingMessage, ServerResponse } from 'node:http'
import { isFields, jsonAnswer, parseJson, readBody } from '../dialects/dialect.ts'
import { RuleError } from '../rules/validate.ts'
import { send } from './exchange.ts'
import type { SimulatorState } from './state.ts'

/** Largest control body accepted; rule lists are small. */
const maxBodyBytes = 1_000_000

function reply(response: ServerResponse, status: number, value: unknown): void {
  send(response, jsonAnswer(status, [], JSON.stringify(value)))
}

function refuse(response: ServerResponse, status: number, message: string): void {
  reply(response, status, { error: { message } })
}

function readJson(request: IncomingMessage, response: ServerResponse, use: (value: unknown) => void): void {
  readBody(request, (body) => {
    if (body.length > maxBodyBytes) return refuse(response, 413, 'body too large')
    const value = parseJson(body)
    if (value === undefined) return refuse(response, 400, 'body is not valid JSON')
    try {
      use(value)
    } catch (error) {
      if (error instanceof RuleError) return refuse(response, 400, error.message)
      throw error
    }
  })
}

/** What each control route does per method. */
const ROUTES: Record<string, Record<string, (state: SimulatorState, request: IncomingMessage, response: ServerResponse) => void>> = {
  '/_sim/health': { GET: (_state, _request, response) => reply(response, 200, { status: 'ok' }) },
  '/_sim/rules': {
    GET: (state, _request, response) => reply(response, 200, state.rules.list()),
    PUT: (state, request, response) => readJson(request, response, (value) => {
      state.setRules(isFields(value) && 'rules' in value ? value.rules : value)
      reply(response, 200, state.rules.list())
    }),
    POST: (state, request, response) => readJson(request, response, (value) => {
      state.rules.add(value)
      reply(response, 201, state.rules.list())
    }),
    DELETE(state, _request, response) {
      state.setRules([])
      reply(response, 200, [])
    },
  },
  '/_sim/requests': {
    GET: (state, _request, response) => reply(response, 200, state.log.publicList()),
    DELETE(state, _request, response) {
      state.log.clear()
      reply(response, 200, { cleared: true })
    },
  },
  '/_sim/stats': { GET: (state, _request, response) => reply(response, 200, state.log.stats()) },
}

/** The control API under `/_sim/`: rules (setting or clearing them empties the rate windows), the request log, stats, health. */
export function handleControl(state: SimulatorState, request: IncomingMessage, response: ServerResponse, path: string): void {
  const method = request.method ?? 'GET'
  request.on('error', () => {})
  const methods = Object.hasOwn(ROUTES, path) ? ROUTES[path]! : undefined
  if (methods === undefined) return refuse(response, 404, `unknown control route ${method} ${path}`)
  if (!Object.hasOwn(methods, method)) return refuse(response, 405, `${method} is not supported on ${path}`)
  methods[method]!(state, request, response)
}
