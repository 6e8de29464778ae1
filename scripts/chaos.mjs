#!/usr/bin/env node
// The chaos run (scripts/chaos/README.md): runs scripts/chaos/run.ts (TypeScript, run directly).
import { register } from 'tsx/esm/api'

register()
await import('./chaos/run.ts')
