/**
 * Ports for test, bench and local-fleet processes to listen on: the one free-port helper of the
 * repository (tests, benches and `npm start` all take theirs from here).
 */
import { readFile } from 'node:fs/promises'
import { anyFreePort, portFree } from '@switchboard/store'

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  // Below the range the kernel hands out to outgoing connections: a port from that range, free
  // when asked, was taken by some test's connection before the node bound it (EADDRINUSE).
  const [ephemeralLow] = (await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768')).trim().split(/\s+/).map(Number)
  const low = 10_000
  const high = Math.min(ephemeralLow ?? 32_768, 65_536)
  for (let attempt = 0; attempt < 100 && high - low > 1_000; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low))
    if (await portFree(port)) return port
  }
  // No range left below the kernel's ephemeral one: a port the kernel picks.
  return anyFreePort()
}
