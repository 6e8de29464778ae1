#!/usr/bin/env node
// `npm start`: runs scripts/fleet/start.ts (TypeScript, run directly like the rest of the tree).
import { register } from 'tsx/esm/api'

register()
await import('./fleet/start.ts')
