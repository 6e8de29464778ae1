/** Problems in a config, each named by its JSON path: `providers.openai.keys[1].weight: expected number`. */
import type { z } from 'zod'

/** Replaces every string "env.NAME" with the variable's value; a missing variable is a problem at that path. */
export function resolveEnv(value: unknown, path: (string | number)[], env: NodeJS.ProcessEnv, problems: string[]): unknown {
  if (typeof value === 'string') {
    if (!value.startsWith('env.')) return value
    const name = value.slice(4)
    const resolved = env[name]
    if (resolved === undefined || resolved === '') {
      problems.push(`${formatPath(path)}: environment variable ${name} is not set`)
      return value
    }
    return resolved
  }
  if (Array.isArray(value)) return value.map((item, index) => resolveEnv(item, [...path, index], env, problems))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = resolveEnv(item, [...path, key], env, problems)
    return out
  }
  return value
}

/** One zod issue as a sentence that starts with the path. */
export function describeIssue(issue: z.core.$ZodIssue, prefix: readonly (string | number)[] = []): string {
  const path = formatPath([...prefix, ...(issue.path as (string | number)[])])
  if (issue.code === 'unrecognized_keys') return `${path || '(top level)'}: unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}`
  let reason = issue.message
  if (issue.code === 'invalid_type') {
    const received = issue.message.indexOf('received')
    reason = `expected ${issue.expected}${received >= 0 ? `, ${issue.message.slice(received)}` : ''}`
  }
  return `${path || '(top level)'}: ${reason}`
}

/** `providers.openai.keys[1].weight` */
export function formatPath(path: readonly (string | number | symbol)[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out
}
