/**
 * A Docker engine for the deploy test. When one already answers (DOCKER_HOST or the default
 * socket), it is used and left running. Otherwise the test installs Debian's docker.io and
 * docker-compose when dockerd is missing (a docker client alone, as /usr/local/bin/docker
 * often is, does not count), and starts its own dockerd with a private data root, exec root
 * and socket, so that stopping it (by its pid) and deleting that folder removes every image,
 * container and volume it made. dockerd changes host networking: the FORWARD policy is put
 * back and the DOCKER chains and docker0 it created are removed.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, openSync, rmSync } from 'node:fs'
import { hasProgram, run, say, sleep, waitFor } from './shell.ts'

/** The engine the test talks to. */
export interface Engine {
  /** True when this test started dockerd (and will stop it and delete its data). */
  ours: boolean
  /** `docker-compose` (v1) or `docker compose` (v2): the program and its leading arguments. */
  compose: [string, ...string[]]
  /** Which Compose that is, for the report. */
  composeVersion: string
  /** Seconds spent installing packages (0 when they were there). */
  installSeconds: number
  stop(): Promise<void>
}

const PACKAGES = ['docker.io', 'docker-compose', 'debootstrap', 'iptables']
const PRIVATE_ROOT = '/var/tmp/switchboard-deploy-test'

async function engineAnswers(): Promise<boolean> {
  return (await run('docker', ['info', '--format', '{{.ServerVersion}}'], { allowFail: true, timeoutMs: 15_000 })).code === 0
}

/** apt-get install what is missing; CI runs as root. */
async function installMissing(): Promise<number> {
  const missing: string[] = []
  if (!(await hasProgram('dockerd'))) missing.push('docker.io')
  if (!(await hasProgram('docker-compose')) && (await run('docker', ['compose', 'version'], { allowFail: true })).code !== 0) missing.push('docker-compose')
  if (!(await hasProgram('debootstrap'))) missing.push('debootstrap')
  if (!(await hasProgram('iptables'))) missing.push('iptables')
  if (missing.length === 0) return 0
  if (process.getuid?.() !== 0) throw new Error(`the deploy test needs ${missing.join(', ')} and is not root to install them: apt-get install ${PACKAGES.join(' ')}`)
  const started = Date.now()
  say(`installing ${missing.join(', ')} from Debian's packages`)
  const env = { DEBIAN_FRONTEND: 'noninteractive' }
  await run('apt-get', ['update', '-qq'], { env, timeoutMs: 180_000 })
  await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, timeoutMs: 300_000 })
  return (Date.now() - started) / 1000
}

async function forwardPolicy(): Promise<string | undefined> {
  const listed = await run('iptables', ['-S', 'FORWARD'], { allowFail: true })
  return /^-P FORWARD (\w+)/m.exec(listed.stdout)?.[1]
}

const TABLES = ['filter', 'nat'] as const

/** `iptables -S` of a table: `-N chain` and `-A chain rule...` lines (quotes are not used by Docker's rules). */
async function rules(table: string): Promise<string[]> {
  return (await run('iptables', ['-t', table, '-S'], { allowFail: true })).stdout.split('\n').filter((line) => line !== '')
}

async function pickCompose(): Promise<{ compose: [string, ...string[]]; composeVersion: string }> {
  // Prefer v1 when present: it is the stricter of the two about the file (issue 37).
  if (await hasProgram('docker-compose')) {
    const version = await run('docker-compose', ['version', '--short'], { allowFail: true })
    return { compose: ['docker-compose'], composeVersion: `docker-compose ${version.stdout.trim()}` }
  }
  const version = await run('docker', ['compose', 'version', '--short'])
  return { compose: ['docker', 'compose'], composeVersion: `docker compose ${version.stdout.trim()}` }
}

/** Finds or starts an engine. Sets DOCKER_HOST in process.env when it starts its own. */
export async function startEngine(): Promise<Engine> {
  const installSeconds = await installMissing()
  if (await engineAnswers()) {
    say('using the Docker engine that is already running (it is left running)')
    return { ours: false, installSeconds, ...(await pickCompose()), stop: async () => {} }
  }
  rmSync(PRIVATE_ROOT, { recursive: true, force: true })
  mkdirSync(PRIVATE_ROOT, { recursive: true })
  const policyBefore = (await forwardPolicy()) ?? 'ACCEPT'
  const rulesBefore: Record<string, Set<string>> = {}
  for (const table of TABLES) rulesBefore[table] = new Set(await rules(table))
  const bridgeBefore = (await run('ip', ['link', 'show', 'docker0'], { allowFail: true })).code === 0
  const socket = `${PRIVATE_ROOT}/docker.sock`
  const log = openSync(`${PRIVATE_ROOT}/dockerd.log`, 'a')
  const dockerd: ChildProcess = spawn(
    'dockerd',
    ['--data-root', `${PRIVATE_ROOT}/data`, '--exec-root', `${PRIVATE_ROOT}/exec`, '--pidfile', `${PRIVATE_ROOT}/dockerd.pid`, '--host', `unix://${socket}`, '--storage-driver', 'overlay2'],
    { stdio: ['ignore', log, log], detached: false },
  )
  const pid = dockerd.pid
  if (pid === undefined) throw new Error('could not start dockerd')
  process.env.DOCKER_HOST = `unix://${socket}`
  say(`started dockerd (pid ${pid}, data in ${PRIVATE_ROOT}); its log: ${PRIVATE_ROOT}/dockerd.log`)
  let exited = false
  dockerd.once('exit', () => (exited = true))
  await waitFor('dockerd to answer', async () => {
    if (exited) throw new Error(`dockerd exited; see ${PRIVATE_ROOT}/dockerd.log`)
    return (await engineAnswers()) ? true : undefined
  }, 60_000)
  const version = await run('docker', ['version', '--format', '{{.Server.Version}}'])
  say(`Docker Engine ${version.stdout.trim()}`)

  const stop = async () => {
    if (!exited) {
      process.kill(pid, 'SIGTERM')
      const until = Date.now() + 30_000
      while (!exited && Date.now() < until) await sleep(200)
      if (!exited) process.kill(pid, 'SIGKILL')
      while (!exited) await sleep(100)
    }
    delete process.env.DOCKER_HOST
    // What dockerd did to the host's networking, undone: its rules, then its chains.
    await run('iptables', ['-P', 'FORWARD', policyBefore], { allowFail: true })
    for (const table of TABLES) {
      const now = await rules(table)
      for (const rule of now.filter((line) => line.startsWith('-A ') && !rulesBefore[table]?.has(line)).reverse()) {
        await run('iptables', ['-t', table, '-D', ...rule.slice(3).split(' ')], { allowFail: true })
      }
      const added = now.filter((line) => line.startsWith('-N ') && !rulesBefore[table]?.has(line)).map((line) => line.slice(3))
      for (const chain of added) await run('iptables', ['-t', table, '-F', chain], { allowFail: true })
      for (const chain of added) await run('iptables', ['-t', table, '-X', chain], { allowFail: true })
    }
    if (!bridgeBefore) await run('ip', ['link', 'delete', 'docker0'], { allowFail: true })
    rmSync(PRIVATE_ROOT, { recursive: true, force: true })
    say(`stopped dockerd (pid ${pid}), deleted its data, FORWARD policy back to ${policyBefore}`)
  }
  return { ours: true, installSeconds, ...(await pickCompose()), stop }
}
