/**
 * @switchboard/test-kit: what tests, benches and scripts share (free ports, a local fleet of real
 * gateway processes, private embedded Postgres servers, the demo's rough day, the simulator's
 * seeded random source), so none of them reaches into another's folder for it; the README says
 * what each export is. No package's `src/` imports it, so none of it reaches the gateway's bundle.
 */
export { freePort } from './ports.ts'
export { seededRandom } from '@switchboard/simulator'
export { freshDatabase, launchFleet, startSimulatorProcess, type FleetNode, type FleetNodeSpec, type LaunchInit, type LocalFleet } from './fleet/launch.ts'
export { DEMO_MODELS, ROUGH_DAY_RULES, roughDayConfig } from './fleet/rough-day.ts'
export { startPrivateServer, testServersRoot, type PrivateServer } from './postgres/private-server.ts'
