/**
 * The frontier bench's upstream: a minimal OpenAI-shaped mock on node:http, lighter than the
 * simulator (no rules, no request record, no tsx), so that on a 2-core machine it leaves as much
 * of its core as it can to the load generator beside it. Every answer waits `latency_ms` before
 * its headers; a stream then sends its role chunk and first content at once, `chunks` more
 * content events `chunk_delay_ms` apart, and the finish chunk and `[DONE]`.
 *
 *   node bench/data-plane/frontier-mock.mjs --port <p>
 *   PUT /_mock/settings {"latency_ms": 20, "chunk_delay_ms": 100, "chunks": 20}
 *   GET /_mock/streams {"open": n, "peak": n}; DELETE /_mock/streams resets the peak
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' } } });
const settings = { latency_ms: 0, chunk_delay_ms: 100, chunks: 20 };
// streams open at once: how many a gateway really holds upstream
const streams = { open: 0, peak: 0 };

const created = Math.floor(Date.now() / 1000);
const completion = JSON.stringify({
  id: 'chatcmpl-mock',
  object: 'chat.completion',
  created,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the mock.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 },
  system_fingerprint: 'fp_mock',
});
const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion.chunk', created, model: 'gpt-4o-mini', system_fingerprint: 'fp_mock', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
const opening = chunk({ role: 'assistant', content: '', refusal: null }) + chunk({ content: 'Hello' });
const word = chunk({ content: ' word' });
const ending = `${chunk({}, 'stop')}data: [DONE]\n\n`;

function answerPlain(response) {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(completion) });
  response.end(completion);
}

function answerStream(response) {
  streams.open += 1;
  streams.peak = Math.max(streams.peak, streams.open);
  response.once('close', () => { streams.open -= 1; });
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  response.write(opening);
  let left = settings.chunks;
  const { chunk_delay_ms: delay } = settings;
  const next = () => {
    if (response.destroyed) return;
    if (left === 0) {
      response.end(ending);
      return;
    }
    left -= 1;
    response.write(word);
    setTimeout(next, delay);
  };
  setTimeout(next, delay);
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (part) => chunks.push(part));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    if (request.method === 'PUT' && request.url === '/_mock/settings') {
      Object.assign(settings, JSON.parse(body));
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(settings));
      return;
    }
    if (request.url === '/_mock/streams') {
      if (request.method === 'DELETE') streams.peak = streams.open;
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(streams));
      return;
    }
    if (request.method === 'GET' && request.url === '/health') {
      response.end('ok');
      return;
    }
    if (request.method !== 'POST' || !request.url.endsWith('/chat/completions')) {
      response.writeHead(404).end();
      return;
    }
    // the bench's bodies are JSON.stringify output: no space after the colon
    const answer = body.includes('"stream":true') ? answerStream : answerPlain;
    if (settings.latency_ms > 0) setTimeout(answer, settings.latency_ms, response);
    else answer(response);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(values.port), '127.0.0.1', () => {
  console.log(`frontier mock listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 1_000).unref();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
