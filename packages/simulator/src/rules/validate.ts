import type { FaultSpec, LatencySpec, SimulatorRule } from '../index.ts'
import { FAULT_PRESETS, type FaultPreset } from './presets.ts'

/** A rule that cannot be used; `message` names the field and what was wrong. */
export class RuleError extends Error {
  readonly code = 'SIMULATOR_INVALID_RULE'

  constructor(message: string) {
    super(message)
    this.name = 'RuleError'
  }
}

const presetSet = new Set<string>(FAULT_PRESETS)
const providers = new Set(['openai', 'azure', 'anthropic', 'bedrock', 'gemini', 'vertex'])
const ruleFields = new Set([
  'provider', 'key', 'model', 'latency_ms', 'chunk_delay_ms', 'error_rate', 'error',
  'fault', 'times', 'tpm', 'rpm', 'completion_tokens', 'first_token_delay_ms', 'rejects_prefill', 'refuses_betas',
])

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function nonNegative(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new RuleError(`${field} must be a non-negative number`)
  }
  return value
}

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new RuleError(`${field} must be a positive integer`)
  }
  return value
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new RuleError(`${field} must be a non-empty string`)
  return value
}

function parseLatency(value: unknown, field: string): LatencySpec {
  if (typeof value === 'number') return nonNegative(value, field)
  if (isObject(value)) {
    if ('p50' in value || 'p99' in value) {
      const p50 = nonNegative(value.p50, `${field}.p50`)
      const p99 = nonNegative(value.p99, `${field}.p99`)
      if (p99 < p50) throw new RuleError(`${field}.p99 must be at least ${field}.p50`)
      return { p50, p99 }
    }
    if ('mean' in value) {
      const mean = nonNegative(value.mean, `${field}.mean`)
      if (value.jitter === undefined) return { mean }
      return { mean, jitter: nonNegative(value.jitter, `${field}.jitter`) }
    }
  }
  throw new RuleError(`${field} must be a number, {mean, jitter?} or {p50, p99}`)
}

/** Checks a fault spec; the error names `field`. */
export function parseFault(value: unknown, field: string): FaultSpec {
  if (typeof value === 'string') {
    if (!presetSet.has(value)) {
      throw new RuleError(`${field}: unknown preset "${value}" (known: ${FAULT_PRESETS.join(', ')})`)
    }
    return value as FaultPreset
  }
  if (!isObject(value)) throw new RuleError(`${field} must be a preset name, {preset, ...} or {status, headers?, body}`)
  if ('preset' in value) {
    const preset = parseFault(value.preset, `${field}.preset`)
    const spec: FaultSpec = { preset: preset as FaultPreset }
    if (value.retry_after_s !== undefined) spec.retry_after_s = nonNegative(value.retry_after_s, `${field}.retry_after_s`)
    if (value.after_ms !== undefined) spec.after_ms = nonNegative(value.after_ms, `${field}.after_ms`)
    if (value.message !== undefined) spec.message = text(value.message, `${field}.message`)
    if (value.after_chunks !== undefined) {
      if (typeof value.after_chunks !== 'number' || !Number.isInteger(value.after_chunks) || value.after_chunks < 0) throw new RuleError(`${field}.after_chunks must be a non-negative integer`)
      spec.after_chunks = value.after_chunks
    }
    return spec
  }
  const status = value.status
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new RuleError(`${field}.status must be an integer HTTP status (200..599)`)
  }
  if (!('body' in value)) throw new RuleError(`${field}.body is required for a raw fault`)
  const spec: FaultSpec = { status, body: value.body }
  if (value.headers !== undefined) {
    if (!isObject(value.headers) || Object.values(value.headers).some((header) => typeof header !== 'string')) {
      throw new RuleError(`${field}.headers must map header names to strings`)
    }
    spec.headers = value.headers as Record<string, string>
  }
  return spec
}

/** Checks one rule from untrusted input and returns a clean copy. */
export function parseRule(value: unknown, field = 'rule'): SimulatorRule {
  if (!isObject(value)) throw new RuleError(`${field} must be an object`)
  for (const name of Object.keys(value)) {
    if (!ruleFields.has(name)) throw new RuleError(`${field}: unknown field "${name}"`)
  }
  const rule: SimulatorRule = {}
  if (value.provider !== undefined) {
    if (typeof value.provider !== 'string' || !providers.has(value.provider)) {
      throw new RuleError(`${field}.provider must be one of openai, azure, anthropic, bedrock, gemini, vertex`)
    }
    rule.provider = value.provider as SimulatorRule['provider']
  }
  if (value.key !== undefined) rule.key = text(value.key, `${field}.key`)
  if (value.model !== undefined) rule.model = text(value.model, `${field}.model`)
  if (value.latency_ms !== undefined) rule.latency_ms = parseLatency(value.latency_ms, `${field}.latency_ms`)
  if (value.chunk_delay_ms !== undefined) rule.chunk_delay_ms = nonNegative(value.chunk_delay_ms, `${field}.chunk_delay_ms`)
  if (value.error_rate !== undefined) {
    const rate = nonNegative(value.error_rate, `${field}.error_rate`)
    if (rate > 1) throw new RuleError(`${field}.error_rate must be between 0 and 1`)
    rule.error_rate = rate
  }
  if (value.error !== undefined) rule.error = parseFault(value.error, `${field}.error`)
  if (value.fault !== undefined) rule.fault = parseFault(value.fault, `${field}.fault`)
  if (value.times !== undefined) rule.times = positiveInteger(value.times, `${field}.times`)
  if (value.tpm !== undefined) rule.tpm = positiveInteger(value.tpm, `${field}.tpm`)
  if (value.rpm !== undefined) rule.rpm = positiveInteger(value.rpm, `${field}.rpm`)
  if (value.completion_tokens !== undefined) {
    rule.completion_tokens = positiveInteger(value.completion_tokens, `${field}.completion_tokens`)
  }
  if (value.first_token_delay_ms !== undefined) rule.first_token_delay_ms = nonNegative(value.first_token_delay_ms, `${field}.first_token_delay_ms`)
  if (value.rejects_prefill !== undefined) {
    if (typeof value.rejects_prefill !== 'boolean') throw new RuleError(`${field}.rejects_prefill must be true or false`)
    rule.rejects_prefill = value.rejects_prefill
  }
  if (value.refuses_betas !== undefined) {
    const flags = value.refuses_betas
    if (!Array.isArray(flags) || !flags.every((flag) => typeof flag === 'string' && flag !== '')) throw new RuleError(`${field}.refuses_betas must be an array of beta flag names`)
    rule.refuses_betas = flags as string[]
  }
  return rule
}

/** Checks a list of rules; the error names the index of the bad one. */
export function parseRules(value: unknown): SimulatorRule[] {
  if (!Array.isArray(value)) throw new RuleError('rules must be an array')
  return value.map((rule, index) => parseRule(rule, `rules[${index}]`))
}
