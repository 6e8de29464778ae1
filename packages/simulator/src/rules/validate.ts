import type { FaultSpec, LatencySpec, ProviderName, SimulatorRule } from '../index.ts'
import { isFields } from '../dialects/dialect.ts'
import { FAULT_PRESETS, type FaultPreset } from './presets.ts'

/** A rule that cannot be used; `message` names the field and what was wrong. */
export class RuleError extends Error {
  readonly code = 'SIMULATOR_INVALID_RULE'
  override readonly name = 'RuleError'
}

const presetSet = new Set<string>(FAULT_PRESETS)
const providers = new Set(['openai', 'azure', 'anthropic', 'bedrock', 'gemini', 'vertex'])

function nonNegative(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new RuleError(`${field} must be a non-negative number`)
  return value
}

/** An integer of at least `least` (by default 1: a positive one). */
function integer(value: unknown, field: string, least = 1): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < least) throw new RuleError(`${field} must be a ${least === 1 ? 'positive' : 'non-negative'} integer`)
  return value
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new RuleError(`${field} must be a non-empty string`)
  return value
}

function parseLatency(value: unknown, field: string): LatencySpec {
  if (typeof value === 'number') return nonNegative(value, field)
  if (isFields(value)) {
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

/** A preset's name (a string only: `{preset: {preset: ...}}` is no fault); the error names `field`. */
function presetName(value: unknown, field: string): FaultPreset {
  if (typeof value !== 'string') throw new RuleError(`${field} must be a preset name`)
  if (!presetSet.has(value)) throw new RuleError(`${field}: unknown preset "${value}" (known: ${FAULT_PRESETS.join(', ')})`)
  return value as FaultPreset
}

/** Checks a fault spec; the error names `field`. */
export function parseFault(value: unknown, field: string): FaultSpec {
  if (typeof value === 'string') return presetName(value, field)
  if (!isFields(value)) throw new RuleError(`${field} must be a preset name, {preset, ...} or {status, headers?, body}`)
  if ('preset' in value) {
    const spec: FaultSpec = { preset: presetName(value.preset, `${field}.preset`) }
    if (value.retry_after_s !== undefined) spec.retry_after_s = nonNegative(value.retry_after_s, `${field}.retry_after_s`)
    if (value.after_ms !== undefined) spec.after_ms = nonNegative(value.after_ms, `${field}.after_ms`)
    if (value.message !== undefined) spec.message = text(value.message, `${field}.message`)
    if (value.after_chunks !== undefined) spec.after_chunks = integer(value.after_chunks, `${field}.after_chunks`, 0)
    return spec
  }
  const status = value.status
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    throw new RuleError(`${field}.status must be an integer HTTP status (200..599)`)
  }
  if (!('body' in value)) throw new RuleError(`${field}.body is required for a raw fault`)
  const spec: FaultSpec = { status, body: value.body }
  if (value.headers !== undefined) {
    if (!isFields(value.headers) || Object.values(value.headers).some((header) => typeof header !== 'string')) {
      throw new RuleError(`${field}.headers must map header names to strings`)
    }
    spec.headers = value.headers as Record<string, string>
  }
  return spec
}

/** Each field a rule may have, in the order a clean copy lists them, with its check. */
const RULE_FIELDS: { [Field in keyof SimulatorRule]-?: (value: unknown, field: string) => SimulatorRule[Field] } = {
  provider(value, field) {
    if (typeof value !== 'string' || !providers.has(value)) throw new RuleError(`${field} must be one of openai, azure, anthropic, bedrock, gemini, vertex`)
    return value as ProviderName
  },
  key: text,
  model: text,
  latency_ms: parseLatency,
  chunk_delay_ms: nonNegative,
  error_rate(value, field) {
    const rate = nonNegative(value, field)
    if (rate > 1) throw new RuleError(`${field} must be between 0 and 1`)
    return rate
  },
  error: parseFault,
  fault: parseFault,
  times: integer,
  tpm: integer,
  rpm: integer,
  completion_tokens: integer,
  first_token_delay_ms: nonNegative,
  rejects_prefill(value, field) {
    if (typeof value !== 'boolean') throw new RuleError(`${field} must be true or false`)
    return value
  },
  refuses_betas(value, field) {
    if (!Array.isArray(value) || !value.every((flag) => typeof flag === 'string' && flag !== '')) throw new RuleError(`${field} must be an array of beta flag names`)
    return value as string[]
  },
}

/** Checks one rule from untrusted input and returns a clean copy. */
export function parseRule(value: unknown, field = 'rule'): SimulatorRule {
  if (!isFields(value)) throw new RuleError(`${field} must be an object`)
  for (const name of Object.keys(value)) {
    if (!Object.hasOwn(RULE_FIELDS, name)) throw new RuleError(`${field}: unknown field "${name}"`)
  }
  const rule: Record<string, unknown> = {}
  for (const [name, check] of Object.entries(RULE_FIELDS)) {
    if (value[name] !== undefined) rule[name] = check(value[name], `${field}.${name}`)
  }
  return rule as SimulatorRule
}

/** Checks a list of rules; the error names the index of the bad one. */
export function parseRules(value: unknown): SimulatorRule[] {
  if (!Array.isArray(value)) throw new RuleError('rules must be an array')
  return value.map((rule, index) => parseRule(rule, `rules[${index}]`))
}
