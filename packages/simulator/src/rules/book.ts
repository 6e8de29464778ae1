import type { ProviderName, SimulatorRule } from '../index.ts'
import { parseRule, parseRules } from './validate.ts'

interface Entry {
  rule: SimulatorRule
  /** Uses left; Infinity for a rule without `times`. */
  remaining: number
}

/** A rule as the control API lists it: the rule plus the uses it has left. */
export type ListedRule = SimulatorRule & { remaining?: number }

/** The ordered rule list; how matching rules merge is the package comment's (index.ts). */
export class RuleBook {
  private entries: Entry[] = []

  /** Replaces every rule after validating them all. */
  set(rules: unknown): void {
    this.entries = parseRules(rules).map(toEntry)
  }

  /** Appends one rule after validating it. */
  add(rule: unknown): void {
    this.entries.push(toEntry(parseRule(rule)))
  }

  list(): ListedRule[] {
    return this.entries.map(({ rule, remaining }) =>
      remaining === Infinity ? { ...rule } : { ...rule, remaining })
  }

  /** The merged rule for one request, undefined when none matches; matching is using, so it counts down `times`. */
  resolve(provider: ProviderName, key: string, model: string): SimulatorRule | undefined {
    let merged: SimulatorRule | undefined
    for (const entry of this.entries) {
      const rule = entry.rule
      if (entry.remaining <= 0) continue
      if (rule.provider !== undefined && rule.provider !== provider) continue
      if (rule.key !== undefined && rule.key !== key) continue
      if (rule.model !== undefined && rule.model !== model) continue
      entry.remaining -= 1
      merged = merged === undefined ? { ...rule } : Object.assign(merged, rule)
    }
    return merged
  }
}

function toEntry(rule: SimulatorRule): Entry {
  return { rule, remaining: rule.times ?? Infinity }
}
