/**
 * Ports for test, bench and local-fleet processes to listen on: the one free-port helper of the
 * repository (tests, benches and `npm start` all take theirs from here).
 */
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  // Below the range the kernel hands out to outgoing connections: a port from that range, free
  // when asked, was taken by some test's connection before the node bound it (EADDRINUSE).
  const [ephemeralLow] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768')).trim().split(/\s+/).map(Number)
  const low = 10_000
  const high = Math.min(ephemeralLow ?? 32_768, 65_536)
  for (let attempt = 0; attempt < 100 && high - low > 1_000; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low))
    if (await listensOn(port)) return port
  }
  return listenAnywhere()
}

/** True when `port` could be listened on at 127.0.0.1 just now. */
function listensOn(port: number): Promise<boolean> {
  const server = createServer()
  return new Promise((done) => {
    server.once('error', () => done(false))
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)))
  })
}

/** A port the kernel picks (the fallback when no range below its ephemeral one is left). */
async function listenAnywhere(): Promise<number> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const address = server.address()
  await new Promise((done) => server.close(done))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}
