/**
 * A local estimate of a Messages request's input tokens, for count_tokens when no provider of the
 * model counts natively: about four characters per token over every text the model reads.
 */
import { asRecord } from './shared.ts'

/** Estimated input tokens of a Messages body. */
export function estimateInputTokens(body: Record<string, unknown>): number {
  let characters = 0
  const add = (value: unknown): void => {
    if (typeof value === 'string') characters += value.length
    else if (Array.isArray(value)) for (const item of value) add(item)
    else {
      const record = asRecord(value)
      if (record === undefined) return
      if (typeof record.text === 'string') characters += record.text.length
      if (typeof record.thinking === 'string') characters += record.thinking.length
      if (record.input !== undefined) characters += JSON.stringify(record.input).length
      if (record.content !== undefined) add(record.content)
    }
  }
  add(body.system)
  add(body.messages)
  if (Array.isArray(body.tools)) characters += JSON.stringify(body.tools).length
  return Math.max(1, Math.ceil(characters / 4))
}
