/** Keeps configured key values, and anything shaped like a provider key or bearer token, out of what the request log stores. */

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
