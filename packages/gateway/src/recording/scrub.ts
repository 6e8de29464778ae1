/**
 * Keeps secrets out of what the request log stores: configured key values wherever they
 * appear, and anything shaped like a provider key or a bearer token (a provider's error may
 * quote the key it refused).
 */

/** Provider-key and bearer-token shapes: OpenAI `sk-...`, Anthropic `sk-ant-...`, Groq `gsk_...`, `Bearer <token>`. */
const KEY_SHAPES = /\b(?:sk-ant-|sk-|gsk_|xai-)[A-Za-z0-9_*.-]{8,}|\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/g

/** `text` with every secret in `secrets` and every key-shaped token replaced by `[redacted]`. */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let clean = text
  for (const secret of secrets) {
    // Short values would redact ordinary words; no real key is this short.
    if (secret.length >= 8 && clean.includes(secret)) clean = clean.split(secret).join('[redacted]')
  }
  return clean.replace(KEY_SHAPES, (_match, bearer: string | undefined) => (bearer ? `${bearer} [redacted]` : '[redacted]'))
}
