/**
 * Anthropic beta flags a target is known to refuse. Claude on Vertex AI answers a flag it does not
 * serve with a 400, "Unexpected value(s) `effort-2025-11-24` for the `anthropic-beta` header": the
 * adapter learns the flags from it, sends once more without them, and leaves them out from then on
 * (per adapter, in memory); the rest of the header goes unchanged, and nothing is ever added.
 */

/** The flags an "Unexpected value(s) ... for the `anthropic-beta` header" message names; none for any other message. */
export function refusedBetaFlags(message: string): string[] {
  const found = /Unexpected value\(s\) (.+?) for the `anthropic-beta` header/.exec(message)
  if (found === null) return []
  return [...found[1]!.matchAll(/`([^`]+)`/g)].map((match) => match[1]!)
}

/** An `anthropic-beta` header as a list of flags (comma-separated, as Anthropic reads it). */
function flagsOf(header: string): string[] {
  return header.split(',').map((flag) => flag.trim()).filter((flag) => flag !== '')
}

/** The flags a target refused so far, and the header to send it. */
export class RefusedBetas {
  private readonly refused = new Set<string>()

  /** The header without the flags this target refused (undefined when none are left), and the flags left out. */
  filter(header: string | undefined): { header: string | undefined; leftOut: string[] } {
    if (header === undefined || this.refused.size === 0) return { header, leftOut: [] }
    const flags = flagsOf(header)
    const kept = flags.filter((flag) => !this.refused.has(flag))
    if (kept.length === flags.length) return { header, leftOut: [] }
    return { header: kept.length === 0 ? undefined : kept.join(','), leftOut: flags.filter((flag) => this.refused.has(flag)) }
  }

  /** Learns the flags a refusal names among those `sent`; true when there is something new to leave out. */
  learn(message: string, sent: string | undefined): boolean {
    if (sent === undefined) return false
    const sentFlags = new Set(flagsOf(sent))
    const named = refusedBetaFlags(message).filter((flag) => sentFlags.has(flag) && !this.refused.has(flag))
    for (const flag of named) this.refused.add(flag)
    return named.length > 0
  }
}

/** The routing log's words for flags left out. */
export function leftOutNote(provider: string, leftOut: readonly string[]): string {
  return `anthropic-beta: left out ${leftOut.join(', ')}: ${provider} refused ${leftOut.length === 1 ? 'it' : 'them'} ("Unexpected value(s) for the anthropic-beta header"); the rest went unchanged`
}
