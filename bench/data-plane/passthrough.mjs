/**
 * The floor of this stack: a bare Hono app on @hono/node-server that forwards
 * POST /v1/chat/completions to one upstream through one undici Pool, with the
 * body and Authorization as received, and answers with the upstream's status,
 * content type and body. No routing, no JSON parsing, no retries: whatever a
 * real gateway on Hono + undici costs above this is its own overhead.
 *
 *   node bench/data-plane/passthrough.mjs --port <p> --upstream http://127.0.0.1:<simport>
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Pool } from 'undici';
import { passThroughArgs, stopOnSignals } from '../lib/pass-through.mjs';

const { port, upstream } = passThroughArgs('passthrough.mjs');

const pool = new Pool(upstream, { connections: 128, keepAliveTimeout: 30_000 });
const app = new Hono();

app.get('/health', (c) => c.text('ok'));

app.post('/v1/chat/completions', async (c) => {
  const body = Buffer.from(await c.req.arrayBuffer());
  const headers = { 'content-type': 'application/json' };
  const authorization = c.req.header('authorization');
  if (authorization) headers.authorization = authorization;
  const upstream = await pool.request({ method: 'POST', path: '/v1/chat/completions', headers, body });
  const contentType = upstream.headers['content-type'] ?? 'application/json';
  // a stream is passed on as it comes (pulled, so a client that leaves ends it;
  // Readable.toWeb on Node 20 throws past a closed controller and kills the
  // process); anything else is read whole first, as bytes, which
  // @hono/node-server writes without going through a web Response
  const responseBody = String(contentType).startsWith('text/event-stream')
    ? ReadableStream.from(upstream.body)
    : new Uint8Array(await upstream.body.arrayBuffer());
  return new Response(responseBody, { status: upstream.statusCode, headers: { 'content-type': contentType } });
});

const server = serve({ fetch: app.fetch, port: port, hostname: '127.0.0.1' }, (info) => {
  console.log(`passthrough listening on http://127.0.0.1:${info.port} -> ${upstream}`);
});

stopOnSignals(server, pool);
