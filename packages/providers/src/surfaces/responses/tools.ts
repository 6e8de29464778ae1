/**
 * Responses `tools` for an upstream that only speaks chat. Pure. Function tools pass; a
 * namespace's tools are flattened to `<namespace>__<name>` and named back in the answer
 * (`ToolNames`); hosted tools run at OpenAI only, so one offered is left out with a note and one
 * forced is a 400; anything else (`custom`, `local_shell`) is a 400 naming it, never dropped.
 */
import { invalid, unsupported } from '../../anthropic/errors.ts'
import { asRecord } from '../shared.ts'

/** Tool types that OpenAI runs itself (the Responses API's built-in tools). */
const HOSTED = new Set<unknown>(['web_search', 'web_search_preview', 'web_search_preview_2025_03_11', 'web_search_2025_08_26', 'file_search', 'code_interpreter', 'image_generation', 'computer_use_preview', 'computer_use', 'mcp', 'tool_search'])

/** The longest tool name chat upstreams (and Anthropic) take. */
const MAX_NAME = 64

/** The upstream names of namespaced tools, both ways. */
export class ToolNames {
  /** Each tool of a namespace, as the caller named it, by its upstream name. */
  private readonly byFlat = new Map<string, { namespace: string; name: string }>()
  private readonly byTool = new Map<string, string>()

  /** The upstream's name for a tool of a namespace (stable for one request). */
  flat(namespace: string, name: string): string {
    return this.byTool.get(`${namespace}\u0000${name}`) ?? this.add(namespace, name, new Set())
  }

  /** Registers a namespaced tool, avoiding `taken` (plain function names). */
  add(namespace: string, name: string, taken: ReadonlySet<string>): string {
    const key = `${namespace}\u0000${name}`
    let flat = joinName(namespace, name)
    if (flat.length > MAX_NAME || taken.has(flat) || (this.byFlat.has(flat) && this.byTool.get(key) !== flat)) flat = `${flat.slice(0, MAX_NAME - 9)}_${hash(key)}`
    this.byFlat.set(flat, { namespace, name })
    this.byTool.set(key, flat)
    return flat
  }

  /** A `function_call` output item's `name` (and `namespace`, for a tool of one) from the upstream's name. */
  callName(flat: string): { name: string; namespace?: string } {
    const original = this.byFlat.get(flat)
    return original === undefined ? { name: flat } : { name: original.name, namespace: original.namespace }
  }
}

/** `mcp__server__` + `tool`, or `multi_agent_v1` + `__` + `spawn`; characters chat refuses become `_`. */
function joinName(namespace: string, name: string): string {
  const joined = namespace.endsWith('__') ? `${namespace}${name}` : `${namespace}__${name}`
  return joined.replace(/[^A-Za-z0-9_-]/g, '_')
}

/** 8 hex digits of FNV-1a: names a long or clashing tool stably. */
function hash(text: string): string {
  let value = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    value ^= text.charCodeAt(index)
    value = Math.imul(value, 0x01000193)
  }
  return (value >>> 0).toString(16).padStart(8, '0')
}

/** Translates `tools` into chat tools, the names of its namespaced tools and notes on what was left out; `choice` is the request's `tool_choice` (a forced hosted tool is refused). */
export function chatToolsOf(tools: unknown, choice: unknown): { tools: Record<string, unknown>[]; names: ToolNames; notes: string[] } {
  const names = new ToolNames()
  const result: ReturnType<typeof chatToolsOf> = { tools: [], names, notes: [] }
  if (tools === undefined || tools === null) return result
  if (!Array.isArray(tools)) throw invalid('tools: must be an array.', 'tools')
  const plain = new Set(tools.map((tool) => asRecord(tool)).filter((tool) => tool?.type === 'function' && typeof tool.name === 'string').map((tool) => tool!.name as string))
  const forced = asRecord(choice)?.type
  const leftOut: string[] = []
  tools.forEach((tool, index) => {
    const record = asRecord(tool)
    const at = `tools[${index}]`
    if (record?.type === 'function') {
      if (typeof record.name !== 'string' || record.name === '') throw invalid(`${at}.name: a function tool needs a name.`, `${at}.name`)
      return void result.tools.push(chatFunction(record, record.name))
    }
    if (record?.type === 'namespace' && typeof record.name === 'string' && Array.isArray(record.tools)) {
      const namespace = record.name
      record.tools.forEach((inner, position) => {
        const member = asRecord(inner)
        // Namespaces hold function tools (their `type` may be left out).
        if (member === undefined || typeof member.name !== 'string' || (member.type !== undefined && member.type !== 'function')) throw unsupported(`${at}.tools[${position}]: a namespace can only be sent to an upstream without the Responses API when it holds function tools (got "${String(member?.type)}").`, `${at}.tools[${position}]`)
        result.tools.push(chatFunction(member, names.add(namespace, member.name, plain)))
      })
      return
    }
    if (HOSTED.has(record?.type)) {
      if (forced === record!.type) throw unsupported(`tool_choice: "${String(forced)}" runs at OpenAI, and this upstream is not OpenAI.`, 'tool_choice')
      leftOut.push(String(record!.type))
      return
    }
    throw unsupported(`${at}: "${String(record?.type)}" tools cannot be sent to an upstream without the Responses API (only function and namespace tools can; hosted tools are left out).`, at)
  })
  if (leftOut.length > 0) result.notes.push(`left out ${leftOut.join(', ')}: hosted tools run at OpenAI only, and this upstream is reached through the chat translation`)
  return result
}

function chatFunction(record: Record<string, unknown>, name: string): Record<string, unknown> {
  const fn: Record<string, unknown> = { name, parameters: record.parameters ?? { type: 'object', properties: {} } }
  if (typeof record.description === 'string') fn.description = record.description
  if (typeof record.strict === 'boolean') fn.strict = record.strict
  return { type: 'function', function: fn }
}

/** The upstream names of a request's namespaced tools, for naming the model's calls back. */
export function toolNamesOf(request: Record<string, unknown>): ToolNames {
  try {
    return chatToolsOf(request.tools, undefined).names
  } catch {
    return new ToolNames()
  }
}
