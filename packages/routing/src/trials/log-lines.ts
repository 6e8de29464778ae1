/** Routing-log lines for trials of failed routes, written for a person reading one request's log. */
import { keyLabel, type LoggedRoute } from '../holds/log-lines.ts'

/** This request is the fleet's one trial of a failed key (info). */
export function trialLine(route: LoggedRoute & { wholeProvider: boolean }): string {
  const where = `${route.provider}/${route.model}`
  if (route.wholeProvider) return `Every key of ${route.provider} failed for ${route.model}; trying key ${keyLabel(route.key)} with this request first (the fleet's one trial), with the healthy providers as fallbacks`
  return `Key ${keyLabel(route.key)} failed on ${where}; trying it with this request first (the fleet's one trial), the other keys behind it`
}

/** A recovering key this node sent nothing for a while: this request proves it (info; issue 36, item 8). */
export function probeLine(route: LoggedRoute & { idleMs: number }): string {
  return `Key ${keyLabel(route.key)} is recovering on ${route.provider}/${route.model} and had no request here for ${Math.round(route.idleMs / 1000)}s or more; trying it with this request first, the other keys behind it`
}
