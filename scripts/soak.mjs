#!/usr/bin/env node
// The soak run (issue 18): runs scripts/soak/run.ts (TypeScript, run directly).
import { register } from 'tsx/esm/api'

register()
await import('./soak/run.ts')
