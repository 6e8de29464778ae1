/** The node's libp2p private key, kept under `dataDir` so the peer id survives restarts. */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'
import type { PrivateKey } from '@libp2p/interface'

/** File name of the persisted key inside `dataDir`. */
export const privateKeyFileName = 'peer.key'

/** Loads the key from `dataDir`, or makes one and stores it (mode 0600) on first start. */
export async function loadOrCreatePrivateKey(dataDir: string): Promise<PrivateKey> {
  const path = join(dataDir, privateKeyFileName)
  try {
    return privateKeyFromProtobuf(await readFile(path))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  const key = await generateKeyPair('Ed25519')
  // Write then rename, so a crash mid-write never leaves a truncated key that
  // would refuse to load (and change the peer id) on the next start.
  const temporary = `${path}.${process.pid}.tmp`
  await writeFile(temporary, privateKeyToProtobuf(key), { mode: 0o600 })
  await rename(temporary, path)
  return key
}
