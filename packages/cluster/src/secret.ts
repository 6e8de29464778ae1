/**
 * The closed fleet: `@libp2p/pnet` wraps every TCP connection in XSalsa20 keyed by a pre-shared key
 * before anything else is spoken, so a process without it can neither join nor inject a message.
 * The key is derived from the fleet secret: operators handle one string, not a swarm key file.
 */
import { hkdfSync } from 'node:crypto'

/** Info string of the derivation; changing it splits every fleet, so never do. */
const derivationInfo = 'switchboard/fleet-psk/v1'

/** The 32-byte network key for a fleet secret, in pnet's swarm key format. */
export function swarmKeyFromSecret(fleetSecret: string): Uint8Array {
  const key = Buffer.from(hkdfSync('sha256', fleetSecret, 'switchboard', derivationInfo, 32))
  return new TextEncoder().encode(`/key/swarm/psk/1.0.0/\n/base16/\n${key.toString('hex')}`)
}
