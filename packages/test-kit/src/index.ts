/**
 * @switchboard/test-kit: what tests, benches and scripts share, so none of them reaches into
 * another's folder for it.
 *
 * - `freePort`: the one free-port helper (a port below the kernel's ephemeral range).
 * - `launchFleet`, `startSimulatorProcess`, `freshDatabase`: a local fleet of real gateway
 *   processes on loopback (used by `npm start`, the chaos and soak runs, the dashboard's tests
 *   and the fleet benches).
 * - `roughDayConfig`, `ROUGH_DAY_RULES`, `DEMO_MODELS`: the demo fleet's providers and the
 *   simulator's rough day.
 * - `startPrivateServer`: a private embedded PostgreSQL owned by this process.
 * - `seededRandom`: a seeded random source, the same draws every run (the simulator's).
 *
 * For tests, benches and scripts only: no package's `src/` imports it, so nothing of it reaches
 * the gateway's bundle or image.
 */
export { freePort } from './ports.ts'
export { seededRandom } from '@switchboard/simulator'
export { freshDatabase, launchFleet, startSimulatorProcess, type FleetNode, type FleetNodeSpec, type LaunchInit, type LocalFleet } from './fleet/launch.ts'
export { DEMO_MODELS, ROUGH_DAY_RULES, roughDayConfig } from './fleet/rough-day.ts'
export { startPrivateServer, testServersRoot, type PrivateServer } from './postgres/private-server.ts'
