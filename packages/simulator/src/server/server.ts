import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { anthropicDialect } from '../anthropic/dialect.ts'
import { azureDialect, azureNotFound } from '../azure/dialect.ts'
import { jsonAnswer, type Dialect } from '../dialects/dialect.ts'
import type { RecordedRequest, SimulatorInit, SimulatorRule } from '../index.ts'
import { openaiDialect } from '../openai/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import { handleControl } from './control.ts'
import { Exchange, send } from './exchange.ts'
import { anthropicCountDialect } from '../anthropic/count.ts'
import { responsesDialect } from '../responses/dialect.ts'
import { embeddingsDialect } from '../embeddings/dialect.ts'
import { bedrockDialect, bedrockStreamDialect } from '../bedrock/dialect.ts'
import { geminiDialect } from '../google/dialect.ts'
import { handleToken } from '../google/tokens.ts'
import { createState, type SimulatorState } from './state.ts'

/** Paths one dialect serves as they are (Azure's v1 Responses API: no api-version, the deployment is the body's `model`). */
const fixedPaths = new Map<string, Dialect>([
  ['/v1/chat/completions', openaiDialect],
  ['/v1/messages', anthropicDialect],
  ['/v1/messages/count_tokens', anthropicCountDialect],
  ['/v1/responses', responsesDialect(openaiDialect)],
  ['/v1/embeddings', embeddingsDialect(openaiDialect)],
  ['/openai/v1/responses', responsesDialect(azureDialect)],
])
const azureEmbeddings = embeddingsDialect(azureDialect)
const geminiDialects = { generateContent: geminiDialect(false), streamGenerateContent: geminiDialect(true) }
/** `/openai/deployments/{deployment}/chat/completions` and `/embeddings` (Azure). */
const azurePath = /^\/openai\/deployments\/(.*)\/(chat\/completions|embeddings)$/
/** `/model/{modelId}/converse` and `/converse-stream` (Bedrock). */
const bedrockPath = /^\/model\/(.+)\/(converse|converse-stream)$/
/** `/v1beta/models/{model}:{method}` (the Gemini API). */
const geminiPath = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/
/** `/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}` (Vertex AI). */
const vertexPath = /^\/v1(?:beta1)?\/projects\/[^/]+\/locations\/[^/]+\/publishers\/(google|anthropic)\/models\/([^/:]+):(generateContent|streamGenerateContent|rawPredict|streamRawPredict)$/

/** The Bedrock, Gemini or Vertex dialect a path names, with its model; undefined when it names none, or a model that does not decode. */
function modelRoute(state: SimulatorState, path: string): { dialect: Dialect; model: string } | undefined {
  try {
    const bedrock = bedrockPath.exec(path)
    if (bedrock !== null) return { dialect: bedrock[2] === 'converse' ? bedrockDialect : bedrockStreamDialect, model: decodeURIComponent(bedrock[1]!) }
    const gemini = geminiPath.exec(path)
    if (gemini !== null) return { dialect: geminiDialects[gemini[2] as keyof typeof geminiDialects], model: decodeURIComponent(gemini[1]!) }
    const vertex = vertexPath.exec(path)
    if (vertex === null) return undefined
    const [, publisher, model, method] = vertex
    // Claude answers only rawPredict, Gemini only generateContent: the other pairing is Vertex's 400.
    if ((publisher === 'anthropic') !== (method === 'rawPredict' || method === 'streamRawPredict')) return undefined
    return { dialect: state.vertex[method as keyof SimulatorState['vertex']], model: decodeURIComponent(model!) }
  } catch {
    return undefined
  }
}

/** Routes one request: provider paths to an exchange, `/_sim/` to the control API, the rest to a 404. */
function route(state: SimulatorState, request: IncomingMessage, response: ServerResponse): void {
  const url = request.url ?? '/'
  const queryAt = url.indexOf('?')
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  const method = request.method
  const exchange = (dialect: Dialect, model?: string, apiVersion?: string) => void new Exchange(state, dialect, request, response, path, model, apiVersion)
  if (method === 'POST') {
    const fixed = fixedPaths.get(path)
    if (fixed !== undefined) return exchange(fixed)
    if (path === '/token') return handleToken(state.tokens, request, response)
    const routed = modelRoute(state, path)
    if (routed !== undefined) return exchange(routed.dialect, routed.model)
    const azure = azurePath.exec(path)
    if (azure !== null) {
      const deployment = decodeURIComponent(azure[1]!)
      const apiVersion = queryAt === -1 ? null : new URLSearchParams(url.slice(queryAt + 1)).get('api-version')
      if (deployment.length > 0 && !deployment.includes('/')) {
        // Azure answers a missing api-version as an unknown resource, before looking at the key.
        if (apiVersion === null || apiVersion === '') return send(response, azureNotFound(state.ids.next('req_')))
        return exchange(azure[2] === 'embeddings' ? azureEmbeddings : azureDialect, deployment, apiVersion)
      }
    }
  }
  if (path.startsWith('/_sim/')) return handleControl(state, request, response, path)
  if (path.startsWith('/openai/')) return send(response, azureNotFound(state.ids.next('req_')))
  send(response, jsonAnswer(404, ['x-request-id', state.ids.next('req_')],
    openaiErrorBody(`Invalid URL (${method ?? 'GET'} ${path})`, 'invalid_request_error', null, null)))
}

/** Starts a simulator and resolves once it listens. */
export async function createSimulator(init: SimulatorInit = {}) {
  const state = createState(init)
  const server = createServer({ keepAliveTimeout: 65_000 }, (request, response) => route(state, request, response))
  const host = init.host ?? '127.0.0.1'
  // Rejects with the server's error (a port in use) instead of listening.
  await once(server.listen(init.port ?? 0, host), 'listening')
  const port = (server.address() as AddressInfo).port
  const urlHost = host.includes(':') ? `[${host}]` : host
  let closing: Promise<void> | undefined
  return {
    /** Base URL, e.g. `http://127.0.0.1:40123`. */
    url: `http://${urlHost}:${port}`,
    port,
    /** Replaces every rule; throws a `RuleError` on an invalid rule. */
    setRules: (rules: SimulatorRule[]): void => state.setRules(rules),
    /** Appends one rule (it overrides earlier ones); throws a `RuleError` on an invalid rule. */
    addRule: (rule: SimulatorRule): void => state.rules.add(rule),
    clearRules: (): void => state.setRules([]),
    /** The last 10,000 requests, oldest first, with whole keys. */
    requests: (): RecordedRequest[] => state.log.list(),
    resetRequests: (): void => state.log.clear(),
    /** Access tokens the OAuth2 endpoint has issued since start. */
    tokensIssued: (): number => state.tokens.issued,
    /** Stops listening and drops every open connection. */
    close: (): Promise<void> => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}
