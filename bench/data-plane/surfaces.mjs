/**
 * CPU per request of the agent surfaces (issue 17), in one run against one
 * Switchboard process and one simulator: the same small question asked as
 *   a. POST /v1/chat/completions to OpenAI (the baseline),
 *   b. POST /v1/messages translated to the OpenAI upstream (Messages -> chat -> Messages),
 *   c. POST /v1/responses natively to OpenAI's /v1/responses,
 *   d. POST /v1/responses translated to a chat-only OpenAI-compatible upstream,
 *   e. POST /v1/messages natively to Anthropic,
 * one after another, `--rounds` times in turn (the table keeps each
 * surface's lowest round by CPU per request). Writes the `surfaces` (or
 * `surfaces-stream`) section of README.md.
 *
 * With `--providers` (issue 20) the rows are chat completions to each wire
 * format instead: OpenAI as is (the baseline), Anthropic, Bedrock (Converse /
 * ConverseStream, SigV4-signed), Vertex AI (Gemini, OAuth2 token), Claude on
 * Vertex (rawPredict), the Gemini API; section `providers` (`providers-stream`).
 *
 *   (cd bench && npm install) && node --import tsx bench/data-plane/surfaces.mjs [--duration 10] [--warmup 2]
 *     [--connections 50] [--rounds 2] [--stream] [--providers] [--no-readme]
 */
import { readFileSync } from 'node:fs';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { setTimeout as sleep } from 'node:timers/promises';
import { measure } from '../lib/load.mjs';
import { killAllNow, stopAll, stopService } from '../lib/processes.mjs';
import { replaceSection, runFacts } from '../lib/report.mjs';
import { startSimulator, targets, UPSTREAM_KEY } from '../lib/targets.mjs';

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    stream: { type: 'boolean', default: false },
    providers: { type: 'boolean', default: false },
    'no-readme': { type: 'boolean', default: false },
  },
});
const bounded = (name, min, max) => {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`--${name} must be a number from ${min} to ${max}`);
  return value;
};
const options = {
  duration: bounded('duration', 1, 60),
  warmup: bounded('warmup', 0, 30),
  connections: bounded('connections', 1, 500),
  rounds: bounded('rounds', 1, 5),
  stream: values.stream,
};

const question = 'hi';
const chatSurfaces = [
  { id: 'chat', label: '`/v1/chat/completions` → OpenAI (chat, as is)', path: '/v1/chat/completions', body: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] }, looks: (text) => text.includes('"choices"') || text.includes('chat.completion.chunk') },
  { id: 'messages-openai', label: '`/v1/messages` → OpenAI (translated both ways)', path: '/v1/messages', body: { model: 'openai/gpt-4o-mini', max_tokens: 64, messages: [{ role: 'user', content: question }] }, looks: (text) => text.includes('"type":"message"') || text.includes('message_stop') },
  { id: 'responses-openai', label: '`/v1/responses` → OpenAI (native)', path: '/v1/responses', body: { model: 'openai/gpt-4o-mini', input: question }, looks: (text) => text.includes('"object":"response"') || text.includes('response.completed') },
  { id: 'responses-compatible', label: '`/v1/responses` → chat-only OpenAI-compatible (translated both ways)', path: '/v1/responses', body: { model: 'compatible/gpt-4o-mini', input: question }, looks: (text) => text.includes('"object":"response"') || text.includes('response.completed') },
  { id: 'messages-anthropic', label: '`/v1/messages` → Anthropic (native)', path: '/v1/messages', body: { model: 'anthropic/claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user', content: question }] }, looks: (text) => text.includes('"type":"message"') || text.includes('message_stop') },
];

const chatTo = (id, label, model) => ({ id, label, path: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: question }] }, looks: (text) => text.includes('"choices"') || text.includes('chat.completion.chunk') });
const providerRows = [
  chatTo('chat', '`/v1/chat/completions` → OpenAI (chat, as is)', 'openai/gpt-4o-mini'),
  chatTo('anthropic', '→ Anthropic Messages (translated)', 'anthropic/claude-haiku-4-5'),
  chatTo('bedrock', '→ Bedrock Converse / ConverseStream (SigV4-signed, translated)', 'bedrock/claude-haiku-4-5'),
  chatTo('vertex-gemini', '→ Vertex AI generateContent (OAuth2 token, translated)', 'vertex/gemini-2.5-flash'),
  chatTo('vertex-claude', '→ Claude on Vertex AI rawPredict (OAuth2 token, translated)', 'vertex/claude-haiku-4-5'),
  chatTo('gemini', '→ Gemini API generateContent (API key, translated)', 'gemini/gemini-2.5-flash'),
];
const surfaces = values.providers ? providerRows : chatSurfaces;

/** The simulator's published test service account (its private key signs the token requests). */
function simulatorServiceAccount(tokenUri) {
  const source = readFileSync(join(benchDir, '../packages/simulator/src/google/service-account.ts'), 'utf8');
  const privateKey = /const SIMULATOR_PRIVATE_KEY = `([^`]+)`/.exec(source)[1];
  return { type: 'service_account', project_id: 'bench-project', private_key_id: 'simulator-key-1', private_key: privateKey, client_email: 'bench@bench-project.iam.gserviceaccount.com', token_uri: tokenUri };
}

async function main() {
  const resultsDir = join(benchDir, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const command = `node --import tsx bench/data-plane/surfaces.mjs${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
  const facts = runFacts(command);
  console.log(`${facts.date} · Node ${facts.node} · ${facts.cpu}`);
  const upstream = await startSimulator({ resultsDir, name: 'surfaces' });
  const network = { base_url: upstream.origin };
  const providers = {
    openai: { keys: [{ name: 'k1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: network },
    compatible: { keys: [{ name: 'c1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: network, custom_provider_config: { base_provider_type: 'openai' } },
    anthropic: { keys: [{ name: 'a1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: network },
    ...(values.providers ? {
      bedrock: { keys: [{ name: 'b1', value: 'AKIABENCH0000001', models: ['*'], weight: 1, bedrock_key_config: { access_key: 'AKIABENCH0000001', secret_key: 'AKIABENCH0000001/simulator-secret', region: 'us-east-1' } }], network_config: network },
      vertex: { keys: [{ name: 'v1', value: 'bench@bench-project.iam.gserviceaccount.com', models: ['*'], weight: 1, vertex_key_config: { project_id: 'bench-project', region: 'us-central1', auth_credentials: simulatorServiceAccount(`${upstream.origin}/token`) } }], network_config: network },
      gemini: { keys: [{ name: 'g1', value: UPSTREAM_KEY, models: ['*'], weight: 1 }], network_config: network },
    } : {}),
  };
  const switchboard = targets.find((target) => target.id === 'switchboard');
  const started = await switchboard.start({ upstream, stream: options.stream, resultsDir, nodeFlagsFor: () => [], providers });
  const origin = new URL(started.url).origin;
  const results = new Map(surfaces.map((surface) => [surface.id, []]));
  try {
    for (const surface of surfaces) {
      const body = JSON.stringify(options.stream ? { ...surface.body, stream: true } : surface.body);
      const response = await request(`${origin}${surface.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await response.body.text();
      if (response.statusCode !== 200 || !surface.looks(text)) throw new Error(`check request ${surface.id}: ${response.statusCode} ${text.slice(0, 300)}`);
      surface.target = { service: started.service, url: `${origin}${surface.path}`, headers: { 'content-type': 'application/json' }, body };
    }
    for (let round = 1; round <= options.rounds; round++) {
      for (const surface of surfaces) {
        const result = await measure(surface.target, upstream.service, options);
        results.get(surface.id).push(result);
        console.log(`round ${round} ${surface.id}: ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, errors ${result.errors}, non-2xx ${result.non2xx}, ${result.cpuMsPerRequest.toFixed(3)} CPU ms/req, other work ${(100 * result.foreignCpuShare).toFixed(0)}%`);
        await sleep(300);
      }
    }
  } finally {
    await stopService(started.service);
    await stopService(upstream.service);
    await stopAll();
  }
  // The least disturbed round: on a shared machine, other work only ever adds CPU time.
  const best = (list) => [...list].sort((left, right) => left.cpuMsPerRequest - right.cpuMsPerRequest)[0];
  const chat = best(results.get('chat'));
  const rows = surfaces.map((surface) => {
    const result = best(results.get(surface.id));
    const all = results.get(surface.id).map((entry) => entry.cpuMsPerRequest.toFixed(3)).join(' / ');
    return `| ${surface.label} | ${Math.round(result.rps)} | ${result.p50} | ${result.p99} | ${result.errors} / ${result.non2xx} | ${result.cpuMsPerRequest.toFixed(3)} | ${(result.cpuMsPerRequest / chat.cpuMsPerRequest).toFixed(2)}x | ${all} | ${(100 * result.foreignCpuShare).toFixed(0)}% |`;
  });
  const section = [
    `Command: \`${facts.command}\``,
    '',
    `Date: ${facts.date} · Node ${facts.node} · CPU: ${facts.cpu} · 1-min load average before the run: ${facts.loadBefore}`,
    '',
    `One Switchboard process and one simulator for the whole run; ${options.connections} connections, ${options.warmup} s warm-up then ${options.duration} s measured per surface, ${options.rounds} round(s) in turn, ${options.stream ? 'streaming (`stream: true`)' : 'non-streaming'} requests. The row is the surface's lowest round by CPU per request (other work on the machine only adds to it); every round's figure is listed.`,
    '',
    '| surface → upstream | RPS | p50 ms | p99 ms | errors / non-2xx | CPU ms / request (gateway) | vs chat completions | CPU ms / request, each round | other work on the machine |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  console.log(`\n${section}\n`);
  if (!values['no-readme']) {
    const name = `${values.providers ? 'providers' : 'surfaces'}${options.stream ? '-stream' : ''}`;
    replaceSection(join(benchDir, 'README.md'), name, section);
    console.log(`wrote the ${name} section of bench/README.md`);
  }
}

process.on('exit', killAllNow);
main().catch((error) => {
  console.error(error?.stack ?? error);
  process.exitCode = 1;
});
