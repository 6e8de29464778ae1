import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { anthropicDialect } from '../anthropic/dialect.ts'
import { azureDialect, azureNotFound } from '../azure/dialect.ts'
import type { Answer, Dialect } from '../dialects/dialect.ts'
import { jsonAnswer } from '../dialects/dialect.ts'
import type { Simulator, SimulatorInit } from '../index.ts'
import { openaiDialect } from '../openai/dialect.ts'
import { openaiErrorBody } from '../openai/errors.ts'
import { IdMaker } from '../reply/format.ts'
import { RuleBook } from '../rules/book.ts'
import { seededRandom } from '../rules/random.ts'
import { RateWindows } from '../rules/rate-window.ts'
import { handleControl } from './control.ts'
import { Exchange } from './exchange.ts'
import { anthropicCountDialect } from '../anthropic/count.ts'
import { responsesDialect } from '../responses/dialect.ts'
import { embeddingsDialect } from '../embeddings/dialect.ts'
import { bedrockDialect, bedrockStreamDialect } from '../bedrock/dialect.ts'
import { geminiDialect, vertexClaudeDialect, vertexDialect } from '../google/dialect.ts'
import { handleToken, TokenBook } from '../google/tokens.ts'

const openaiResponses = responsesDialect(openaiDialect)
const azureResponses = responsesDialect(azureDialect)
const openaiEmbeddings = embeddingsDialect(openaiDialect)
const azureEmbeddings = embeddingsDialect(azureDialect)
import { RequestRecords } from './records.ts'
import type { SimulatorState } from './state.ts'

const azurePrefix = '/openai/deployments/'
const azureSuffix = '/chat/completions'
const azureEmbeddingsSuffix = '/embeddings'
const bedrockPrefix = '/model/'
const bedrockConverse = '/converse'
const bedrockConverseStream = '/converse-stream'
const geminiGenerate = geminiDialect(false)
const geminiStream = geminiDialect(true)
/** `/v1beta/models/{model}:{method}` (the Gemini API). */
const geminiPath = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/
/** `/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}` (Vertex AI). */
const vertexPath = /^\/v1(?:beta1)?\/projects\/[^/]+\/locations\/[^/]+\/publishers\/(google|anthropic)\/models\/([^/:]+):(generateContent|streamGenerateContent|rawPredict|streamRawPredict)$/

/** The Gemini or Vertex dialect a path names, with its model; undefined when it names none. */
function googleRoute(state: SimulatorState, path: string): { dialect: Dialect; model: string } | undefined {
  const gemini = geminiPath.exec(path)
  if (gemini !== null) return { dialect: gemini[2] === 'generateContent' ? geminiGenerate : geminiStream, model: decodeURIComponent(gemini[1]!) }
  const vertex = vertexPath.exec(path)
  if (vertex === null) return undefined
  const [, publisher, model, method] = vertex
  const dialects = state.vertex
  // Claude answers only rawPredict, Gemini only generateContent: the other pairing is Vertex's 400.
  if ((publisher === 'anthropic') !== (method === 'rawPredict' || method === 'streamRawPredict')) return undefined
  const dialect = method === 'generateContent' ? dialects.generate : method === 'streamGenerateContent' ? dialects.stream : method === 'rawPredict' ? dialects.claude : dialects.claudeStream
  return { dialect, model: decodeURIComponent(model!) }
}

function send(response: ServerResponse, answer: Answer): void {
  response.writeHead(answer.status, answer.headers)
  response.end(answer.body)
}

/** Routes one request: provider paths to an exchange, `/_sim/` to the control API, the rest to a 404. */
function route(state: SimulatorState, request: IncomingMessage, response: ServerResponse): void {
  const url = request.url ?? '/'
  const queryAt = url.indexOf('?')
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  const method = request.method
  if (method === 'POST') {
    if (path === '/v1/chat/completions') return void new Exchange(state, openaiDialect, request, response, undefined, undefined)
    if (path === '/v1/messages') return void new Exchange(state, anthropicDialect, request, response, undefined, undefined)
    if (path === '/v1/messages/count_tokens') return void new Exchange(state, anthropicCountDialect, request, response, undefined, undefined)
    if (path === '/v1/responses') return void new Exchange(state, openaiResponses, request, response, undefined, undefined)
    if (path === '/v1/embeddings') return void new Exchange(state, openaiEmbeddings, request, response, undefined, undefined)
    // Azure's v1 API: no api-version, the deployment is the body's `model`.
    if (path.startsWith(bedrockPrefix)) {
      const streaming = path.endsWith(bedrockConverseStream)
      const suffix = streaming ? bedrockConverseStream : bedrockConverse
      if (path.endsWith(suffix) && path.length > bedrockPrefix.length + suffix.length) {
        let modelId: string | undefined
        try {
          modelId = decodeURIComponent(path.slice(bedrockPrefix.length, path.length - suffix.length))
        } catch {
          modelId = undefined
        }
        if (modelId !== undefined) return void new Exchange(state, streaming ? bedrockStreamDialect : bedrockDialect, request, response, modelId, undefined)
      }
    }
    if (path === '/token') return handleToken(state.tokens, request, response)
    if (path.includes(':')) {
      let google: ReturnType<typeof googleRoute>
      try {
        google = googleRoute(state, path)
      } catch {
        google = undefined
      }
      if (google !== undefined) return void new Exchange(state, google.dialect, request, response, google.model, undefined)
    }
    if (path === '/openai/v1/responses') return void new Exchange(state, azureResponses, request, response, undefined, undefined)
    const suffix = path.endsWith(azureSuffix) ? azureSuffix : path.endsWith(azureEmbeddingsSuffix) ? azureEmbeddingsSuffix : undefined
    if (path.startsWith(azurePrefix) && suffix !== undefined) {
      const deployment = decodeURIComponent(path.slice(azurePrefix.length, path.length - suffix.length))
      const apiVersion = queryAt === -1 ? null : new URLSearchParams(url.slice(queryAt + 1)).get('api-version')
      if (deployment.length > 0 && !deployment.includes('/')) {
        // Azure answers a missing api-version as an unknown resource, before looking at the key.
        if (apiVersion === null || apiVersion === '') return send(response, azureNotFound(state.ids.next('req_')))
        return void new Exchange(state, suffix === azureSuffix ? azureDialect : azureEmbeddings, request, response, deployment, apiVersion)
      }
    }
  }
  if (path.startsWith('/_sim/')) return handleControl(state, request, response, path)
  if (path.startsWith('/openai/')) return send(response, azureNotFound(state.ids.next('req_')))
  send(response, jsonAnswer(404, ['x-request-id', state.ids.next('req_')],
    openaiErrorBody(`Invalid URL (${method ?? 'GET'} ${path})`, 'invalid_request_error', null, null)))
}

/** Starts the HTTP server behind {@link Simulator}. */
export async function startSimulator(init: SimulatorInit): Promise<Simulator> {
  const tokens = new TokenBook(init.token_lifetime_s ?? 3600)
  const state: SimulatorState = {
    rules: new RuleBook(),
    windows: new RateWindows(),
    log: new RequestRecords(),
    random: seededRandom(init.seed ?? 1),
    ids: new IdMaker(),
    tokens,
    vertex: { generate: vertexDialect(tokens, false), stream: vertexDialect(tokens, true), claude: vertexClaudeDialect(tokens, false), claudeStream: vertexClaudeDialect(tokens, true) },
  }
  if (init.rules !== undefined) state.rules.set(init.rules)
  const server = createServer({ keepAliveTimeout: 65_000 }, (request, response) => route(state, request, response))
  const host = init.host ?? '127.0.0.1'
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(init.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const urlHost = host.includes(':') ? `[${host}]` : host
  let closing: Promise<void> | undefined
  return {
    url: `http://${urlHost}:${port}`,
    port,
    setRules: (rules) => {
      state.rules.set(rules)
      state.windows.clear()
    },
    addRule: (rule) => state.rules.add(rule),
    clearRules: () => {
      state.rules.clear()
      state.windows.clear()
    },
    requests: () => state.log.list(),
    resetRequests: () => state.log.clear(),
    tokensIssued: () => state.tokens.issued,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}
