#!/usr/bin/env node
// Runs the TypeScript CLI directly: the repo has no build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
