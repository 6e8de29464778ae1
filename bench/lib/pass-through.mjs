/** What the two pass-through floors share: their flags and how they stop. */
import { parseArgs } from 'node:util';

/**
 * `--port <p> --upstream http://127.0.0.1:<simport> [--connections 128]` (the upstream pool's
 * size); prints the usage and exits without an upstream.
 */
export function passThroughArgs(script) {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      upstream: { type: 'string' },
      connections: { type: 'string', default: '128' },
    },
  });
  if (!values.upstream) {
    console.error(`usage: node ${script} --port <p> --upstream http://127.0.0.1:<port>`);
    process.exit(2);
  }
  return { port: Number(values.port), upstream: values.upstream, connections: Number(values.connections) };
}

/** Closes the server and the upstream pool on SIGTERM or SIGINT (at most 2 s). */
export function stopOnSignals(server, pool) {
  const shutdown = () => {
    server.close();
    pool.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2_000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
