/**
 * Micro-benchmark of the gateway-key check every inference request runs (issue 13): finding
 * the caller's key by the SHA-256 of its secret among 1,000 keys, and admitting it under a
 * requests-per-minute limit on the node that owns the counts; beside the no-key path (a
 * loopback caller while no key exists). Budget: the check under 2 us.
 *
 * Run from the repository root:  node --import tsx bench/data-plane/gateway-keys.ts
 *
 * Each case runs batches of BATCH checks timed with process.hrtime.bigint; the figures are the
 * median and p99 of the per-batch averages (per request), after a warm-up.
 */
import type { IncomingMessage } from 'node:http'
import { authenticateCaller } from '../../packages/gateway/src/access/callers.ts'
import { GatewayKeyRing, hashSecret } from '../../packages/gateway/src/access/gateway-keys.ts'
import { KeyLimiter } from '../../packages/gateway/src/access/limits.ts'

const KEYS = 1_000
const BATCH = 1_000
const BATCHES = 1_000
const WARMUP_BATCHES = 200

const secrets = Array.from({ length: KEYS }, (_, index) => `sk-sb-bench-${String(index).padStart(6, '0')}-abcdefghijklmnop`)
const ring = new GatewayKeyRing()
ring.replace(
  secrets.map((secret, index) => ({
    id: `gk_${index}`,
    name: `key-${index}`,
    secretHash: hashSecret(secret),
    redacted: '',
    providers: null,
    models: null,
    // A limit no batch reaches in one window, so every check admits.
    requestsPerMinute: index % 2 === 0 ? Number.MAX_SAFE_INTEGER : null,
    tokensPerMinute: null,
    origin: 'api' as const,
    createdAt: new Date(),
    revokedAt: null,
  })),
)
const limiter = new KeyLimiter({ now: Date.now })
const empty = new GatewayKeyRing()

const request = (headers: Record<string, string>) => ({ headers: { host: '127.0.0.1:8080', ...headers }, socket: { remoteAddress: '127.0.0.1', localPort: 8080 } }) as unknown as IncomingMessage
const limited = request({ authorization: `Bearer ${secrets[500]}` })
const unlimited = request({ authorization: `Bearer ${secrets[501]}` })
const viaApiKey = request({ 'x-api-key': secrets[500]! })
const local = request({})

function run(label: string, check: () => unknown): { label: string; median: number; p99: number } {
  const perRequest: number[] = []
  for (let batch = 0; batch < WARMUP_BATCHES + BATCHES; batch++) {
    const started = process.hrtime.bigint()
    for (let index = 0; index < BATCH; index++) check()
    const elapsed = Number(process.hrtime.bigint() - started) / BATCH / 1_000
    if (batch >= WARMUP_BATCHES) perRequest.push(elapsed)
  }
  perRequest.sort((a, b) => a - b)
  return { label, median: perRequest[Math.floor(perRequest.length / 2)]!, p99: perRequest[Math.floor(perRequest.length * 0.99)]! }
}

const results = [
  run('no gateway key exists: loopback caller', () => authenticateCaller({ keys: empty, limiter }, local)),
  run('Bearer key, no limits (1,000 keys)', () => authenticateCaller({ keys: ring, limiter }, unlimited)),
  run('Bearer key with requests_per_minute', () => authenticateCaller({ keys: ring, limiter }, limited)),
  run('x-api-key with requests_per_minute', () => authenticateCaller({ keys: ring, limiter }, viaApiKey)),
]
console.log('| check | median (us) | p99 (us) |')
console.log('| --- | ---: | ---: |')
for (const result of results) console.log(`| ${result.label} | ${result.median.toFixed(3)} | ${result.p99.toFixed(3)} |`)
