/**
 * The floor under the floor: the same pass-through as passthrough.mjs, on node:http alone
 * (no Hono). Switchboard serves its inference route on Node's own request and response (Hono
 * keeps the admin API), so this row shows what that part of the stack costs by itself.
 *
 *   node bench/data-plane/passthrough-node.mjs --port <p> --upstream http://127.0.0.1:<simport>
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { passThroughArgs, stopOnSignals } from '../lib/pass-through.mjs';

const { port, upstream, connections } = passThroughArgs('passthrough-node.mjs');

const pool = new Pool(upstream, { connections, keepAliveTimeout: 30_000 });

async function forward(request, response) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  const headers = { 'content-type': 'application/json' };
  if (request.headers.authorization) headers.authorization = request.headers.authorization;
  const upstream = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body: Buffer.concat(chunks) });
  const contentType = upstream.headers['content-type'] ?? 'application/json';
  if (String(contentType).startsWith('text/event-stream')) {
    // a stream is passed on as it comes; a client that leaves ends it
    response.writeHead(upstream.statusCode, { 'content-type': contentType });
    response.once('close', () => upstream.body.destroy());
    for await (const chunk of upstream.body) {
      if (!response.write(chunk)) await new Promise((resolve) => response.once('drain', resolve));
    }
    response.end();
    return;
  }
  const body = Buffer.from(await upstream.body.arrayBuffer());
  response.writeHead(upstream.statusCode, { 'content-type': contentType, 'content-length': body.length });
  response.end(body);
}

const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/health') {
    response.end('ok');
    return;
  }
  if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
    response.writeHead(404).end();
    return;
  }
  forward(request, response).catch((error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(String(error?.message ?? error));
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`passthrough-node listening on http://127.0.0.1:${server.address().port} -> ${upstream}`);
});

stopOnSignals(server, pool);
