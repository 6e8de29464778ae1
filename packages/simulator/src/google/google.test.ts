import { createSign } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createSimulator, simulatorServiceAccount, type Simulator } from '../index.ts'

let simulator: Simulator
beforeAll(async () => { simulator = await createSimulator({ token_lifetime_s: 2 }) })
afterAll(() => simulator.close())
beforeEach(() => simulator.clearRules())

const EMAIL = 'switchboard@simulator-project.iam.gserviceaccount.com'
const VERTEX = '/v1/projects/simulator-project/locations/us-central1/publishers'

/** A JWT-bearer assertion signed as google-auth-library signs one. */
function assertion(privateKey: string, claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000)
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const unsigned = `${part({ alg: 'RS256', typ: 'JWT' })}.${part({ iss: EMAIL, scope: 'https://www.googleapis.com/auth/cloud-platform', aud: 'https://oauth2.googleapis.com/token', iat: now, exp: now + 3600, ...claims })}`
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(privateKey).toString('base64url')}`
}

async function token(claims: Record<string, unknown> = {}): Promise<Response> {
  const account = simulatorServiceAccount(EMAIL, 'simulator-project', `${simulator.url}/token`)
  return fetch(`${simulator.url}/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: assertion(account.private_key!, claims) }),
  })
}

function post(path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(simulator.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
}

const CONTENTS = { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }

describe('OAuth2 token endpoint', () => {
  it('issues an access token for an assertion signed with the simulator key pair', async () => {
    const response = await token()
    expect(response.status).toBe(200)
    const body = await response.json() as { access_token: string; expires_in: number; token_type: string }
    expect(body).toMatchObject({ expires_in: 2, token_type: 'Bearer' })
    expect(body.access_token).toMatch(/^ya29\.sim-/)
  })

  it('refuses a badly signed or stale assertion with invalid_grant', async () => {
    const forged = await fetch(`${simulator.url}/token`, {
      method: 'POST', body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: `${assertion(simulatorServiceAccount(EMAIL, 'p', '').private_key!).slice(0, -6)}AAAAAA` }),
    })
    expect(forged.status).toBe(400)
    expect(await forged.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid JWT Signature.' })
    const stale = await token({ iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 })
    expect(stale.status).toBe(400)
  })
})

describe('Vertex AI dialect', () => {
  it('answers generateContent for a live token, recorded under the service account', async () => {
    const { access_token: accessToken } = await (await token()).json() as { access_token: string }
    const response = await post(`${VERTEX}/google/models/gemini-2.5-pro:generateContent`, CONTENTS, { authorization: `Bearer ${accessToken}` })
    expect(response.status).toBe(200)
    const body = await response.json() as Record<string, any>
    expect(body.candidates[0].content.parts[0].text).toBe('Hello from the simulator (vertex/gemini-2.5-pro).')
    expect(body.candidates[0].finishReason).toBe('STOP')
    expect(body.usageMetadata.totalTokenCount).toBe(body.usageMetadata.promptTokenCount + body.usageMetadata.candidatesTokenCount)
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'vertex', key: EMAIL, model: 'gemini-2.5-pro', status: 200 })
  })

  it('refuses an expired token with 401 UNAUTHENTICATED (ACCESS_TOKEN_EXPIRED)', async () => {
    const { access_token: accessToken } = await (await token()).json() as { access_token: string }
    const deadline = Date.now() + 10_000
    let response: Response
    do {
      await new Promise((resolve) => setTimeout(resolve, 250))
      response = await post(`${VERTEX}/google/models/gemini-2.5-pro:generateContent`, CONTENTS, { authorization: `Bearer ${accessToken}` })
    } while (response.status === 200 && Date.now() < deadline)
    expect(response.status).toBe(401)
    const body = await response.json() as { error: { status: string; details: Array<{ reason: string }> } }
    expect(body.error.status).toBe('UNAUTHENTICATED')
    expect(body.error.details[0]!.reason).toBe('ACCESS_TOKEN_EXPIRED')
  })

  it('serves Claude through rawPredict and streamRawPredict in Anthropic\'s format', async () => {
    const { access_token: accessToken } = await (await token()).json() as { access_token: string }
    const body = { anthropic_version: 'vertex-2023-10-16', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }
    const plain = await post(`${VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`, body, { authorization: `Bearer ${accessToken}` })
    const message = await plain.json() as Record<string, any>
    expect(message).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello from the simulator (vertex/claude-sonnet-4-5@20250929).' }] })
    const streamed = await post(`${VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`, { ...body, stream: true }, { authorization: `Bearer ${accessToken}` })
    expect(streamed.headers.get('content-type')).toBe('text/event-stream')
    const text = await streamed.text()
    expect(text).toContain('event: message_start')
    expect(text).toContain('event: message_stop')
    const wrongVersion = await post(`${VERTEX}/anthropic/models/claude-sonnet-4-5:rawPredict`, { ...body, anthropic_version: '2023-06-01' }, { authorization: `Bearer ${accessToken}` })
    expect(wrongVersion.status).toBe(400)
  })

  it('model_access for one model is PERMISSION_DENIED with IAM_PERMISSION_DENIED; other models still answer', async () => {
    simulator.setRules([{ provider: 'vertex', key: EMAIL, model: 'gemini-2.5-pro', fault: 'model_access' }])
    const { access_token: accessToken } = await (await token()).json() as { access_token: string }
    const denied = await post(`${VERTEX}/google/models/gemini-2.5-pro:generateContent`, CONTENTS, { authorization: `Bearer ${accessToken}` })
    expect(denied.status).toBe(403)
    const error = (await denied.json() as { error: { status: string; message: string; details: Array<{ reason: string }> } }).error
    expect(error.status).toBe('PERMISSION_DENIED')
    expect(error.details[0]!.reason).toBe('IAM_PERMISSION_DENIED')
    const other = await post(`${VERTEX}/google/models/gemini-2.5-flash:generateContent`, CONTENTS, { authorization: `Bearer ${accessToken}` })
    expect(other.status).toBe(200)
  })
})

describe('Gemini API dialect', () => {
  const path = '/v1beta/models/gemini-2.5-flash'

  it('answers generateContent keyed by x-goog-api-key, and refuses a request without a key', async () => {
    const response = await post(`${path}:generateContent`, CONTENTS, { 'x-goog-api-key': 'AIzaSimulatorKey0001' })
    expect(response.status).toBe(200)
    expect(simulator.requests().at(-1)).toMatchObject({ provider: 'gemini', key: 'AIzaSimulatorKey0001', model: 'gemini-2.5-flash' })
    expect((await post(`${path}:generateContent`, CONTENTS, {})).status).toBe(403)
  })

  it('streams SSE chunks of GenerateContentResponse, finishReason and usage on the last', async () => {
    simulator.setRules([{ provider: 'gemini', completion_tokens: 30 }])
    const response = await post(`${path}:streamGenerateContent?alt=sse`, CONTENTS, { 'x-goog-api-key': 'AIzaSimulatorKey0001' })
    expect(response.headers.get('content-type')).toBe('text/event-stream')
    const chunks = (await response.text()).split('\r\n\r\n').filter((line) => line.startsWith('data: ')).map((line) => JSON.parse(line.slice(6)))
    expect(chunks.length).toBeGreaterThan(3)
    expect(chunks.map((chunk) => chunk.candidates[0].content.parts[0].text).join('')).toHaveLength(120)
    expect(chunks.at(-1).candidates[0].finishReason).toBe('STOP')
    expect(chunks.at(-1).usageMetadata.candidatesTokenCount).toBe(30)
  })

  it('forces the function toolConfig ANY names', async () => {
    const body = {
      ...CONTENTS,
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
    }
    const answer = await (await post(`${path}:generateContent`, body, { 'x-goog-api-key': 'AIzaSimulatorKey0001' })).json() as Record<string, any>
    expect(answer.candidates[0].content.parts[0].functionCall).toEqual({ name: 'get_weather', args: { city: 'simulated' } })
  })

  it.each([
    ['invalid_api_key', 400, 'INVALID_ARGUMENT'],
    ['rate_limit', 429, 'RESOURCE_EXHAUSTED'],
    ['model_access', 403, 'PERMISSION_DENIED'],
    ['model_not_found', 404, 'NOT_FOUND'],
    ['region_blocked', 400, 'FAILED_PRECONDITION'],
    ['unavailable', 503, 'UNAVAILABLE'],
  ] as const)('%s answers %i %s', async (preset, status, googleStatus) => {
    simulator.setRules([{ provider: 'gemini', fault: preset }])
    const response = await post(`${path}:generateContent`, CONTENTS, { 'x-goog-api-key': 'AIzaSimulatorKey0001' })
    expect(response.status).toBe(status)
    expect(((await response.json()) as { error: { status: string } }).error.status).toBe(googleStatus)
  })

  it('stream_error ends the SSE stream with an error object', async () => {
    simulator.setRules([{ provider: 'gemini', fault: 'stream_error', completion_tokens: 30 }])
    const text = await (await post(`${path}:streamGenerateContent?alt=sse`, CONTENTS, { 'x-goog-api-key': 'AIzaSimulatorKey0001' })).text()
    const last = JSON.parse(text.trim().split('\r\n\r\n').at(-1)!.slice(6))
    expect(last.error.status).toBe('UNAVAILABLE')
  })
})
