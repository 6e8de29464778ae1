/**
 * @switchboard/test-kit: what tests, benches and scripts share, so none reaches into another's folder
 * (the README lists each export). No package's `src/` imports it: none of it reaches the gateway's bundle.
 */
export { freePort } from './ports.ts'
export { seededRandom } from '@switchboard/simulator'
export { freshDatabase, launchFleet, startSimulatorProcess, type FleetNode, type FleetNodeSpec, type LaunchInit, type LocalFleet } from './fleet/launch.ts'
export { DEMO_MODELS, ROUGH_DAY_RULES, roughDayConfig } from './fleet/rough-day.ts'
export { startPrivateServer, testServersRoot, type PrivateServer } from './postgres/private-server.ts'
