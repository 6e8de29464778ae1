/**
 * OpenAI chat.completion.chunk stream -> Responses stream events (each event's JSON `data`, named
 * by its `type`, numbered by `sequence_number`): response.created and .in_progress, then per output
 * item its added, delta and done events, last response.completed (or .incomplete) with usage.
 */
import { TranslationError } from '../../anthropic/errors.ts'
import { asRecord, chatUsage, newId, parseChunk, toolCallPieces } from '../shared.ts'
import { responseObject, responseUsage } from './response.ts'
import { toolNamesOf, type ToolNames } from './tools.ts'

interface OpenItem {
  kind: 'message' | 'function_call'
  item: Record<string, unknown>
  outputIndex: number
  callIndex: number
  text: string
}

/** Translates the chunks of one chat stream; `request` is the caller's Responses body. */
export async function* chatStreamToResponseEvents(chunks: AsyncIterable<string>, model: string, request: Record<string, unknown>): AsyncGenerator<string> {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>) => JSON.stringify({ type, sequence_number: sequence++, ...fields })
  const id = newId('resp_')
  const createdAt = Math.floor(Date.now() / 1000)
  const response = (status: string, output: unknown[], usage: unknown) => responseObject(id, createdAt, model, request, status, output, usage)
  const output: Record<string, unknown>[] = []
  let open = null as OpenItem | null
  let started = false
  let finish: unknown = null
  let usage: ReturnType<typeof chatUsage> | null = null
  let names: ToolNames | undefined

  function* closeOpen(): Generator<string> {
    const item = open
    if (item === null) return
    open = null
    const at = { item_id: item.item.id, output_index: item.outputIndex }
    if (item.kind === 'message') {
      const part = { type: 'output_text', text: item.text, annotations: [], logprobs: [] }
      yield event('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs: [] })
      yield event('response.content_part.done', { ...at, content_index: 0, part })
      item.item.content = [part]
    } else {
      yield event('response.function_call_arguments.done', { ...at, arguments: item.text })
      item.item.arguments = item.text
    }
    item.item.status = 'completed'
    yield event('response.output_item.done', { output_index: item.outputIndex, item: item.item })
  }

  for await (const text of chunks) {
    const chunk = parseChunk(text)
    if (chunk === undefined) continue
    if (!started) {
      started = true
      yield event('response.created', { response: response('in_progress', [], null) })
      yield event('response.in_progress', { response: response('in_progress', [], null) })
    }
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chatUsage(chunk.usage)
    const choice = asRecord((Array.isArray(chunk.choices) ? chunk.choices : [])[0])
    if (choice === undefined) continue
    const delta = asRecord(choice.delta)
    const content = delta?.content
    if (typeof content === 'string' && content !== '') {
      if (open?.kind !== 'message') {
        yield* closeOpen()
        const item = { id: newId('msg_'), type: 'message', status: 'in_progress', role: 'assistant', content: [] as unknown[] }
        output.push(item)
        open = { kind: 'message', item, outputIndex: output.length - 1, callIndex: -1, text: '' }
        yield event('response.output_item.added', { output_index: open.outputIndex, item: { ...item, content: [] } })
        yield event('response.content_part.added', { item_id: item.id, output_index: open.outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } })
      }
      open.text += content
      yield event('response.output_text.delta', { item_id: open.item.id, output_index: open.outputIndex, content_index: 0, delta: content, logprobs: [] })
    }
    for (const { callIndex, id, name, piece } of toolCallPieces(delta)) {
      if (open?.kind !== 'function_call' || open.callIndex !== callIndex) {
        yield* closeOpen()
        names ??= toolNamesOf(request)
        // A namespaced tool's call gets its own name and namespace back, as OpenAI streams it.
        const item = { id: newId('fc_'), type: 'function_call', status: 'in_progress', call_id: String(id ?? newId('call_')), ...names.callName(String(name ?? '')), arguments: '' }
        output.push(item)
        open = { kind: 'function_call', item, outputIndex: output.length - 1, callIndex, text: '' }
        yield event('response.output_item.added', { output_index: open.outputIndex, item: { ...item } })
      }
      if (typeof piece === 'string' && piece !== '') {
        open.text += piece
        yield event('response.function_call_arguments.delta', { item_id: open.item.id, output_index: open.outputIndex, delta: piece })
      }
    }
    if (choice.finish_reason !== undefined && choice.finish_reason !== null) finish = choice.finish_reason
  }
  if (!started) throw new TranslationError('upstream_malformed', 'The upstream stream ended before its first chunk.')
  yield* closeOpen()
  const status = finish === 'length' ? 'incomplete' : 'completed'
  yield event(`response.${status}`, { response: response(status, output, responseUsage(usage ?? chatUsage(undefined))) })
}
