import type { IncomingMessage, ServerResponse } from 'node:http'
import { RuleError } from '../rules/validate.ts'
import type { SimulatorState } from './state.ts'

/** Largest control body accepted; rule lists are small. */
const maxBodyBytes = 1_000_000

function reply(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value)
  response.writeHead(status, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body))])
  response.end(body)
}

function refuse(response: ServerResponse, status: number, message: string): void {
  reply(response, status, { error: { message } })
}

function readJson(request: IncomingMessage, response: ServerResponse, use: (value: unknown) => void): void {
  let body = ''
  let tooLarge = false
  request.setEncoding('utf8')
  request.on('data', (chunk: string) => {
    body += chunk
    if (body.length > maxBodyBytes) tooLarge = true
  })
  request.on('end', () => {
    if (tooLarge) return refuse(response, 413, 'body too large')
    let value: unknown
    try {
      value = JSON.parse(body)
    } catch {
      return refuse(response, 400, 'body is not valid JSON')
    }
    try {
      use(value)
    } catch (error) {
      if (error instanceof RuleError) return refuse(response, 400, error.message)
      throw error
    }
  })
}

/**
 * The control API under `/_sim/`: rules, the request log, stats, health.
 * Setting or clearing rules also empties the rate windows, so a new `rpm`
 * script starts from a clean minute.
 */
export function handleControl(state: SimulatorState, request: IncomingMessage, response: ServerResponse, path: string): void {
  const method = request.method ?? 'GET'
  request.on('error', () => {})
  switch (path) {
    case '/_sim/health':
      if (method !== 'GET') return refuse(response, 405, `${method} is not supported on ${path}`)
      return reply(response, 200, { status: 'ok' })
    case '/_sim/rules':
      switch (method) {
        case 'GET': return reply(response, 200, state.rules.list())
        case 'PUT': return readJson(request, response, (value) => {
          const rules = typeof value === 'object' && value !== null && !Array.isArray(value) && 'rules' in value
            ? (value as { rules: unknown }).rules
            : value
          state.rules.set(rules)
          state.windows.clear()
          reply(response, 200, state.rules.list())
        })
        case 'POST': return readJson(request, response, (value) => {
          state.rules.add(value)
          reply(response, 201, state.rules.list())
        })
        case 'DELETE':
          state.rules.clear()
          state.windows.clear()
          return reply(response, 200, [])
        default: return refuse(response, 405, `${method} is not supported on ${path}`)
      }
    case '/_sim/requests':
      if (method === 'GET') return reply(response, 200, state.log.publicList())
      if (method === 'DELETE') {
        state.log.clear()
        return reply(response, 200, { cleared: true })
      }
      return refuse(response, 405, `${method} is not supported on ${path}`)
    case '/_sim/stats':
      if (method !== 'GET') return refuse(response, 405, `${method} is not supported on ${path}`)
      return reply(response, 200, state.log.stats())
    default:
      return refuse(response, 404, `unknown control route ${method} ${path}`)
  }
}
