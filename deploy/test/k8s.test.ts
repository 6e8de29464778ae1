/**
 * deploy/k8s, checked offline (there is no cluster here): every object passes the
 * Kubernetes schema of its kind (kubernetes-models), and the objects are wired to each
 * other and to the gateway: selectors, ports, probes on real routes, every variable the
 * gateway reads set, secrets and config that exist.
 */
import { describe, expect, it } from 'vitest'
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1'
import { StatefulSet } from 'kubernetes-models/apps/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseConfig } from '../../packages/gateway/src/config/load.ts'
import { placeholderSecrets } from '../../packages/gateway/src/config/placeholders.ts'
import {
  configEnvReferences,
  dockerfile,
  envNamesOfFlag,
  gatewayEnvReads,
  gatewayFlags,
  gatewayGetRoutes,
  imageUser,
  k8sManifests,
  kustomizationConfigMapGenerators,
  kustomizationResources,
  root,
  shutdownBoundSeconds,
  type Yaml,
} from './repo.ts'

/** Flags the pods deliberately leave at the gateway's default. Empty: every flag is set. */
const FLAGS_LEFT_AT_DEFAULT = new Set<string>()

const VALIDATORS: Record<string, (object: Yaml) => { validate(): void }> = {
  'v1/Secret': (object) => new Secret(object as ConstructorParameters<typeof Secret>[0]),
  'v1/ConfigMap': (object) => new ConfigMap(object as ConstructorParameters<typeof ConfigMap>[0]),
  'v1/Service': (object) => new Service(object as ConstructorParameters<typeof Service>[0]),
  'apps/v1/StatefulSet': (object) => new StatefulSet(object as ConstructorParameters<typeof StatefulSet>[0]),
  'policy/v1/PodDisruptionBudget': (object) => new PodDisruptionBudget(object as ConstructorParameters<typeof PodDisruptionBudget>[0]),
  'autoscaling/v2/HorizontalPodAutoscaler': (object) => new HorizontalPodAutoscaler(object as ConstructorParameters<typeof HorizontalPodAutoscaler>[0]),
}

const manifests = k8sManifests()
const ofKind = (kind: string): Yaml[] => manifests.filter((manifest) => manifest.object.kind === kind).map((manifest) => manifest.object)
const only = (kind: string): Yaml => {
  const objects = ofKind(kind)
  if (objects.length !== 1) throw new Error(`expected one ${kind} in deploy/k8s, found ${objects.length}`)
  return objects[0] as Yaml
}

const statefulSet = only('StatefulSet')
const podTemplate: Yaml = statefulSet.spec.template
const podLabels: Record<string, string> = podTemplate.metadata.labels
const containers: Yaml[] = podTemplate.spec.containers
const gateway = containers.find((container) => container.name === 'gateway') as Yaml
const containerEnv: Yaml[] = gateway.env ?? []
const envValue = (name: string): string | undefined => containerEnv.find((entry) => entry.name === name)?.value
const secret = only('Secret')
const secretKeys = new Set([...Object.keys(secret.stringData ?? {}), ...Object.keys(secret.data ?? {})])
const services = ofKind('Service')
const headless = services.find((service) => service.spec.clusterIP === 'None') as Yaml
const traffic = services.find((service) => service.spec.clusterIP !== 'None') as Yaml

/** A container port by name or number, as a Service targetPort or a probe names it. */
function containerPort(reference: string | number): Yaml | undefined {
  return (gateway.ports as Yaml[]).find((port) => (typeof reference === 'number' ? port.containerPort === reference : port.name === reference))
}

/** Does a label selector (matchLabels map) pick the StatefulSet's pods? */
function selectsPods(selector: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false
  return Object.entries(selector).every(([key, value]) => podLabels[key] === value)
}

describe('deploy/k8s kustomization', () => {
  it('lists every manifest file of deploy/k8s, and only existing ones', () => {
    const files = readdirSync(join(root, 'deploy/k8s'))
      .filter((file) => /\.ya?ml$/.test(file) && file !== 'kustomization.yaml')
      .sort()
    expect([...kustomizationResources()].sort()).toEqual(files)
  })

  // Regression (issue 37): edits to a plain ConfigMap did not restart the pods.
  it('generates the ConfigMap with a content hash in its name, so an edit rolls the pods', () => {
    const generators = kustomizationConfigMapGenerators()
    expect(generators.map((generator) => generator.name)).toEqual(['switchboard-config'])
    for (const generator of generators) {
      expect(generator.options?.disableNameSuffixHash, `${generator.name} must keep kustomize's content hash`).not.toBe(true)
      for (const file of generator.files as string[]) expect(readdirSync(join(root, 'deploy/k8s')), `${file} is generated from but missing`).toContain(file.split('=').at(-1))
    }
    const kustomization = readdirSync(join(root, 'deploy/k8s'))
    expect(kustomization).not.toContain('configmap.yaml')
  })
})

describe('deploy/k8s schemas (kubernetes-models)', () => {
  it.each(manifests.map((manifest) => [`${manifest.file}: ${manifest.object.kind}/${manifest.object.metadata?.name}`, manifest.object] as const))('%s is a valid object of its kind', (_name, object) => {
    const validator = VALIDATORS[`${object.apiVersion}/${object.kind}`]
    expect(validator, `no schema check for ${object.apiVersion} ${object.kind}: add it to VALIDATORS`).toBeDefined()
    expect(() => validator?.(object).validate()).not.toThrow()
  })

  it('has one of each kind the fleet needs, and two Services', () => {
    for (const kind of ['Secret', 'ConfigMap', 'StatefulSet', 'PodDisruptionBudget', 'HorizontalPodAutoscaler']) expect(ofKind(kind)).toHaveLength(1)
    expect(services).toHaveLength(2)
    expect(headless).toBeDefined()
    expect(traffic).toBeDefined()
  })
})

describe('deploy/k8s wiring', () => {
  it('selects the StatefulSet pods with its own selector', () => {
    expect(selectsPods(statefulSet.spec.selector.matchLabels)).toBe(true)
    expect(statefulSet.spec.selector.matchExpressions).toBeUndefined()
  })

  it('both Services select exactly the StatefulSet pods', () => {
    for (const service of services) {
      expect(selectsPods(service.spec.selector), `Service ${service.metadata.name} does not select the gateway pods`).toBe(true)
    }
  })

  it('discovers peers through a headless Service that is the StatefulSet governing Service', () => {
    expect(headless.spec.clusterIP).toBe('None')
    expect(headless.spec.publishNotReadyAddresses).toBe(true)
    expect(statefulSet.spec.serviceName).toBe(headless.metadata.name)
  })

  it('routes Service ports to the container ports: HTTP for traffic, p2p for peers', () => {
    for (const service of services) {
      for (const port of service.spec.ports as Yaml[]) {
        const target = containerPort(port.targetPort ?? port.port)
        expect(target, `Service ${service.metadata.name} port ${port.name} targets ${port.targetPort}, which the container does not have`).toBeDefined()
        expect(port.protocol ?? 'TCP').toBe(target?.protocol ?? 'TCP')
      }
    }
    const targetOf = (service: Yaml) => (service.spec.ports as Yaml[]).map((port) => containerPort(port.targetPort ?? port.port)?.containerPort)
    expect(targetOf(traffic)).toContain(Number(envValue('SWITCHBOARD_PORT')))
    expect(targetOf(headless)).toContain(Number(envValue('SWITCHBOARD_P2P_PORT')))
  })

  it('names container ports after what the gateway listens on, and the image exposes them', () => {
    expect(containerPort('http')?.containerPort).toBe(Number(envValue('SWITCHBOARD_PORT')))
    expect(containerPort('p2p')?.containerPort).toBe(Number(envValue('SWITCHBOARD_P2P_PORT')))
    const exposed = dockerfile()
      .filter((instruction) => instruction.keyword === 'EXPOSE')
      .flatMap((instruction) => instruction.args.split(/\s+/).map(Number))
    for (const port of gateway.ports as Yaml[]) expect(exposed).toContain(port.containerPort)
  })

  it('probes a real GET route of the gateway on the HTTP port', () => {
    const routes = gatewayGetRoutes()
    expect(routes).toContain('/health')
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const action: Yaml | undefined = gateway[probe]?.httpGet
      expect(action, `${probe} is not an httpGet probe`).toBeDefined()
      expect(routes, `${probe} hits ${action?.path}, which the gateway does not serve`).toContain(action?.path)
      expect(containerPort(action?.port)?.containerPort, `${probe} is not on the HTTP port`).toBe(Number(envValue('SWITCHBOARD_PORT')))
    }
  })

  it('sets every flag and variable the gateway reads', () => {
    const set = new Set(containerEnv.map((entry) => entry.name as string))
    for (const flag of gatewayFlags()) {
      if (FLAGS_LEFT_AT_DEFAULT.has(flag)) continue
      expect(
        envNamesOfFlag(flag).some((name) => set.has(name)),
        `--${flag} (${envNamesOfFlag(flag).join(' or ')}) is not set in the StatefulSet`,
      ).toBe(true)
    }
    for (const name of gatewayEnvReads()) expect(set.has(name), `${name} is read by the gateway but not set`).toBe(true)
    for (const entry of containerEnv) expect(entry.value !== undefined || entry.valueFrom !== undefined, `${entry.name} has no value`).toBe(true)
  })

  it('listens on every interface, not the gateway default of 127.0.0.1', () => {
    expect(envValue('SWITCHBOARD_HOST')).toBe('0.0.0.0')
  })

  it('takes the node id from the pod name and the region from a pod label', () => {
    const nodeId = containerEnv.find((entry) => entry.name === 'SWITCHBOARD_NODE_ID')
    expect(nodeId?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name')
    const region = containerEnv.find((entry) => entry.name === 'SWITCHBOARD_REGION')
    const label = /^metadata\.labels\['([^']+)'\]$/.exec(region?.valueFrom?.fieldRef?.fieldPath ?? '')?.[1]
    expect(label, 'SWITCHBOARD_REGION should come from a pod label').toBeDefined()
    expect(podLabels[label ?? '']).toMatch(/^[a-z0-9-]+$/)
  })

  it('points the peers at the headless Service on the p2p port', () => {
    const peers = envValue('SWITCHBOARD_PEERS') ?? ''
    const [host, port] = peers.split(':')
    expect(host?.split('.')[0]).toBe(headless.metadata.name)
    expect(Number(port)).toBe(Number(envValue('SWITCHBOARD_P2P_PORT')))
  })

  it('defines every $(VAR) an env value uses before it', () => {
    containerEnv.forEach((entry, index) => {
      for (const match of String(entry.value ?? '').matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
        const earlier = containerEnv.slice(0, index).map((previous) => previous.name)
        expect(earlier, `${entry.name} uses $(${match[1]}) before it is defined`).toContain(match[1])
      }
    })
  })

  it('takes secrets from the Secret, by keys it has', () => {
    const references = containerEnv.filter((entry) => entry.valueFrom?.secretKeyRef).map((entry) => entry.valueFrom.secretKeyRef as Yaml)
    expect(references.length).toBeGreaterThan(0)
    for (const reference of references) {
      expect(reference.name).toBe(secret.metadata.name)
      expect(secretKeys.has(reference.key), `the Secret has no key ${reference.key}`).toBe(true)
    }
    for (const name of ['SWITCHBOARD_FLEET_SECRET', 'SWITCHBOARD_ADMIN_TOKENS', 'DATABASE_URL']) {
      expect(containerEnv.find((entry) => entry.name === name)?.valueFrom?.secretKeyRef, `${name} should come from the Secret`).toBeDefined()
    }
  })

  it('mounts the ConfigMap config.json where SWITCHBOARD_CONFIG says, and it is a valid config', () => {
    const configMap = only('ConfigMap')
    const volume = (podTemplate.spec.volumes as Yaml[]).find((entry) => entry.configMap?.name === configMap.metadata.name)
    expect(volume, 'no volume from the ConfigMap').toBeDefined()
    const mount = (gateway.volumeMounts as Yaml[]).find((entry) => entry.name === volume?.name)
    const item = (volume?.configMap.items as Yaml[] | undefined)?.find((entry) => entry.key === 'config.json')
    expect(`${mount?.mountPath}/${item?.path ?? 'config.json'}`).toBe(envValue('SWITCHBOARD_CONFIG'))
    const config = JSON.parse(configMap.data['config.json']) as unknown
    // Every env.VAR of the config is set in the pod, from a Secret key.
    for (const name of configEnvReferences(config)) {
      expect(containerEnv.find((entry) => entry.name === name)?.valueFrom?.secretKeyRef?.key, `config.json reads env.${name}, which the pod does not get from the Secret`).toBeDefined()
    }
    const podEnv = Object.fromEntries(containerEnv.map((entry) => [entry.name, entry.value ?? secret.stringData?.[entry.valueFrom?.secretKeyRef?.key] ?? 'from-the-downward-api']))
    expect(() => parseConfig(config, 'deploy/k8s/config.json', podEnv)).not.toThrow()
  })

  it('keeps the p2p identity on a per-pod volume claim at the data dir', () => {
    const claims = (statefulSet.spec.volumeClaimTemplates ?? []) as Yaml[]
    const mount = (gateway.volumeMounts as Yaml[]).find((entry) => entry.mountPath === envValue('SWITCHBOARD_DATA_DIR'))
    expect(mount, 'nothing is mounted at SWITCHBOARD_DATA_DIR').toBeDefined()
    expect(claims.map((claim) => claim.metadata.name)).toContain(mount?.name)
  })

  it('probes readiness on /health, startup and liveness on /health/live (a node waiting for Postgres is kept out of the Service, not restarted)', () => {
    expect(gateway.startupProbe.httpGet.path).toBe('/health/live')
    expect(gateway.readinessProbe.httpGet.path).toBe('/health')
    expect(gateway.livenessProbe.httpGet.path).toBe('/health/live')
  })

  // Regression (issue 37): the grace period was 30 s, 1 s above preStop + the real 24 s bound.
  it('drains before SIGKILL: the preStop pause and the gateway shutdown bound fit in the grace period with margin', () => {
    const command: string[] = gateway.lifecycle?.preStop?.exec?.command ?? []
    const pause = gateway.lifecycle?.preStop?.sleep?.seconds ?? Number(command[0] === 'sleep' ? command[1] : Number.NaN)
    expect(pause).toBeGreaterThanOrEqual(3)
    const bound = shutdownBoundSeconds()
    expect(bound).toBe(24)
    expect(podTemplate.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(pause + bound + 10)
  })

  // Regression (issue 37): pods were only loosely spread (ScheduleAnyway on hostnames).
  it('never puts two gateways on one node (required anti-affinity) and spreads them across zones', () => {
    const required = (podTemplate.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []) as Yaml[]
    const onHostname = required.find((term) => term.topologyKey === 'kubernetes.io/hostname')
    expect(onHostname, 'no required anti-affinity on kubernetes.io/hostname').toBeDefined()
    expect(selectsPods(onHostname?.labelSelector?.matchLabels)).toBe(true)
    const spread = ((podTemplate.spec.topologySpreadConstraints ?? []) as Yaml[]).find((constraint) => constraint.topologyKey === 'topology.kubernetes.io/zone')
    expect(spread, 'no topology spread across topology.kubernetes.io/zone').toBeDefined()
    expect(spread?.maxSkew).toBe(1)
    expect(selectsPods(spread?.labelSelector?.matchLabels)).toBe(true)
  })

  // Regression (issue 37): the gateway started with the template's placeholder secrets.
  it('ships a Secret whose every value the gateway refuses at start until it is replaced', () => {
    const values = Object.entries(secret.stringData as Record<string, string>).map(([name, value]) => ({ name, value }))
    expect(placeholderSecrets(values).sort()).toEqual(values.map((entry) => entry.name).sort())
  })

  it('runs as the image user, non-root, on a read-only root filesystem with a writable /tmp', () => {
    const pod: Yaml = podTemplate.spec.securityContext
    expect(pod.runAsNonRoot).toBe(true)
    expect(pod.runAsUser).toBe(imageUser(dockerfile()).uid)
    expect(gateway.securityContext.readOnlyRootFilesystem).toBe(true)
    expect(gateway.securityContext.allowPrivilegeEscalation).toBe(false)
    const tmp = (gateway.volumeMounts as Yaml[]).find((entry) => entry.mountPath === '/tmp')
    expect((podTemplate.spec.volumes as Yaml[]).find((entry) => entry.name === tmp?.name)?.emptyDir).toBeDefined()
  })

  it('requests CPU and memory (the HPA scales on CPU requests)', () => {
    expect(gateway.resources?.requests?.cpu).toBeDefined()
    expect(gateway.resources?.requests?.memory).toBeDefined()
    expect(gateway.resources?.limits?.memory).toBeDefined()
  })

  it('has a PodDisruptionBudget over the same pods that leaves most of the fleet up', () => {
    const budget = only('PodDisruptionBudget')
    expect(selectsPods(budget.spec.selector.matchLabels)).toBe(true)
    const { maxUnavailable, minAvailable } = budget.spec as { maxUnavailable?: number | string; minAvailable?: number | string }
    if (maxUnavailable !== undefined) expect(maxUnavailable).toBe(1)
    else expect(Number(minAvailable)).toBeGreaterThanOrEqual(2)
  })

  it('autoscales the StatefulSet on CPU, never below three nodes', () => {
    const autoscaler = only('HorizontalPodAutoscaler')
    expect(autoscaler.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: statefulSet.metadata.name })
    expect((autoscaler.spec.metrics as Yaml[]).some((metric) => metric.type === 'Resource' && metric.resource.name === 'cpu')).toBe(true)
    expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(3)
    expect(autoscaler.spec.maxReplicas).toBeGreaterThanOrEqual(autoscaler.spec.minReplicas)
  })

  // Regression (issue 37): `replicas: 3` reset the HPA's count at every apply.
  it('leaves the replica count to the HPA (no replicas in the StatefulSet)', () => {
    expect(statefulSet.spec.replicas).toBeUndefined()
  })
})
