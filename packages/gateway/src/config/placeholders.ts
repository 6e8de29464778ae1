/**
 * Deploy templates ship secrets as `replace-me...` placeholders: the CLI refuses to start with
 * one and names the variable, rather than run with a guessable secret (issue 37).
 */

/** What every placeholder value of the deploy templates contains. */
export const PLACEHOLDER = /replace-me/i

/** One secret setting the node was given: where it came from (a flag or a variable) and its value. */
export interface SecretSetting {
  /** `--fleet-secret`, `SWITCHBOARD_ADMIN_TOKENS`, `GATEWAY_KEY_APP`, ... */
  name: string
  value: string | undefined
}

/** The names of the settings that still hold a placeholder, in the order given, each once. */
export function placeholderSecrets(settings: readonly SecretSetting[]): string[] {
  const names = settings.filter((setting) => setting.value !== undefined && PLACEHOLDER.test(setting.value)).map((setting) => setting.name)
  return [...new Set(names)]
}

/** The variables a config.json names as `env.VAR` (provider keys, gateway keys, admin tokens), sorted. */
export function configEnvReferences(source: unknown): string[] {
  const names = new Set<string>()
  const walk = (value: unknown): void => {
    if (typeof value === 'string') {
      const match = /^env\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(value)
      if (match?.[1]) names.add(match[1])
    } else if (Array.isArray(value)) value.forEach(walk)
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk)
  }
  walk(source)
  return [...names].sort()
}

/** The sentence the CLI prints before it exits. */
export function describePlaceholders(names: readonly string[]): string {
  const list = names.join(', ')
  const subject = names.length === 1 ? `${list} still holds` : `${list} still hold`
  return `${subject} the "replace-me" placeholder of the deploy template (deploy/k8s/secret.yaml): set a real value (e.g. \`openssl rand -hex 32\` for secrets and tokens) and start again. Refusing to start.`
}
