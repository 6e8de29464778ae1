/**
 * Typed gossip topics. Every message travels in a JSON envelope `{ node, at, body }` (sender node
 * id, sender clock, payload), size- and schema-checked in gossipsub's topic validator: a bad one
 * is neither delivered nor forwarded, only counted. A region-scoped topic carries the region in
 * its gossip name and only that region's nodes subscribe, so flooding reaches that region alone.
 */
import { TopicValidatorResult } from '@libp2p/gossipsub'
import type { GossipSub, Message } from '@libp2p/gossipsub'
import type { ZodType } from 'zod'
import { z } from 'zod'
import { ClusterError } from './errors.ts'
import type { Member } from './membership.ts'
import type { PublishQueue } from './publish-queue.ts'
import type { Counters } from './stats.ts'

/** Who may receive a topic's messages. */
export type TopicScope = 'fleet' | 'region'

/** Options of `cluster.topic()`. */
export interface TopicOptions<T> {
  /** `fleet`: every node; `region`: nodes of the publisher's region only. */
  scope: TopicScope
  /** Largest encoded message (envelope included); bigger ones are refused and dropped. Default 64 KiB, at most 1 MiB. */
  maxBytes?: number
  /** Messages with the same key replace each other while waiting in the publish queue (latest wins). */
  coalesceKey?: (message: T) => string
}

/** Facts about a received message beyond its body. */
export interface MessageMeta {
  /** Peer id of the publisher (messages are signed, so this is authenticated). */
  peerId: string
  /** Node id the publisher put in the envelope. */
  nodeId: string
  /** Publisher's wall clock when it published (ms since epoch). */
  sentAt: number
}

/** A handler of a topic's messages; `from` is undefined until the publisher's first heartbeat. */
export type TopicHandler<T> = (message: T, from: Member | undefined, meta: MessageMeta) => void

/** A typed topic. */
export interface Topic<T> {
  /** The gossipsub topic string (region-scoped ones end in `/region/<region>`). */
  readonly name: string
  /** Queues a message for every subscriber; rejects with `message_invalid`, `message_oversized`, `queue_full` or `stopped`. */
  publish(message: T): Promise<void>
  /** Adds a handler; returns the function that removes it. */
  subscribe(handler: TopicHandler<T>): () => void
  /** Peer ids of the peers known to be subscribed (wait for one before asking for a snapshot). */
  subscribers(): string[]
}

/** Default and ceiling of `maxBytes`. */
export const topicLimits = { defaultMaxBytes: 64 * 1024, maxBytes: 1024 * 1024 } as const

/** Largest gossip frame gossipsub accepts: above every topic's limit, so oversize reaches our validator. */
export const maxGossipFrameBytes = topicLimits.maxBytes + 64 * 1024

/** What a topic or request/response protocol name may be: letters, digits, . _ - separated by /. */
export const namePattern = /^[a-z0-9][a-z0-9._-]*(\/[a-z0-9][a-z0-9._-]*)*$/i

const envelopeSchema = z.object({
  node: z.string().max(128),
  at: z.number().finite(),
  body: z.unknown(),
})

/** What a topic needs from the cluster. */
export interface TopicsComponents {
  pubsub: GossipSub
  queue: PublishQueue
  counters: Counters
  nodeId: string
  region: string
  member(peerId: string): Member | undefined
  log(level: 'warn' | 'debug', message: string, fields?: Record<string, unknown>): void
}

interface Registered {
  schema: ZodType<unknown>
  maxBytes: number
  handlers: Set<TopicHandler<unknown>>
}

/** All typed topics of one cluster node. */
export class Topics {
  private readonly registered = new Map<string, Registered>()
  /** Bodies parsed by the validator, handed to the delivery step without parsing twice. */
  private readonly decoded = new WeakMap<Message, { body: unknown; nodeId: string; sentAt: number }>()
  private readonly encoder = new TextEncoder()
  private readonly decoder = new TextDecoder('utf-8', { fatal: true })

  constructor(private readonly components: TopicsComponents) {
    components.pubsub.addEventListener('message', (event) => this.deliver(event.detail))
  }

  /** Creates a topic; `internal` allows names users cannot take. */
  create<T>(name: string, schema: ZodType<T>, options: TopicOptions<T>, internal = false): Topic<T> {
    if (!internal && !namePattern.test(name)) throw new ClusterError('invalid_topic', `topic name "${name}" must be letters, digits, . _ - separated by /`)
    if (options.scope !== 'fleet' && options.scope !== 'region') throw new ClusterError('invalid_topic', `topic scope must be "fleet" or "region"`)
    const maxBytes = options.maxBytes ?? topicLimits.defaultMaxBytes
    if (!Number.isInteger(maxBytes) || maxBytes < 64 || maxBytes > topicLimits.maxBytes) {
      throw new ClusterError('invalid_topic', `maxBytes of "${name}" must be an integer from 64 to ${topicLimits.maxBytes}`)
    }
    const full = `/switchboard/1/${name}${options.scope === 'region' ? `/region/${this.components.region}` : ''}`
    if (this.registered.has(full)) throw new ClusterError('topic_exists', `topic "${name}" already exists on this node`)
    const entry: Registered = { schema: schema as ZodType<unknown>, maxBytes, handlers: new Set() }
    this.registered.set(full, entry)
    const { pubsub, counters } = this.components
    counters.topic(full)
    pubsub.topicValidators.set(full, (_peer, message) => this.validate(full, entry, message))
    pubsub.subscribe(full)
    return {
      name: full,
      publish: (message) => this.publish(full, entry, message, options.coalesceKey?.(message)),
      subscribe: (handler) => {
        const stored = handler as TopicHandler<unknown>
        entry.handlers.add(stored)
        return () => void entry.handlers.delete(stored)
      },
      subscribers: () => pubsub.getSubscribers(full).map((peer) => peer.toString()),
    }
  }

  private async publish(topic: string, entry: Registered, message: unknown, coalesceKey: string | undefined): Promise<void> {
    const checked = entry.schema.safeParse(message)
    if (!checked.success) throw new ClusterError('message_invalid', `message for ${topic} does not match its schema: ${checked.error.message}`)
    const data = this.encoder.encode(JSON.stringify({ node: this.components.nodeId, at: Date.now(), body: checked.data }))
    if (data.byteLength > entry.maxBytes) {
      throw new ClusterError('message_oversized', `message for ${topic} is ${data.byteLength} bytes, over its ${entry.maxBytes}`)
    }
    const { queue, counters } = this.components
    try {
      await queue.enqueue(topic, data, coalesceKey)
    } catch (error) {
      if (error instanceof ClusterError && error.code === 'queue_full') counters.dropped.queueFull++
      throw error
    }
    counters.published++
    counters.topic(topic).published++
  }

  private validate(topic: string, entry: Registered, message: Message): TopicValidatorResult {
    const { counters } = this.components
    if (message.data.byteLength > entry.maxBytes) {
      counters.dropped.oversized++
      counters.topic(topic).oversized++
      return TopicValidatorResult.Reject
    }
    try {
      const envelope = envelopeSchema.parse(JSON.parse(this.decoder.decode(message.data)))
      const body = entry.schema.safeParse(envelope.body)
      if (body.success) {
        this.decoded.set(message, { body: body.data, nodeId: envelope.node, sentAt: envelope.at })
        return TopicValidatorResult.Accept
      }
    } catch {
      // not UTF-8, not JSON, or not an envelope: invalid like a schema miss
    }
    counters.dropped.invalid++
    counters.topic(topic).invalid++
    this.components.log('debug', 'dropped an invalid gossip message', { topic })
    return TopicValidatorResult.Reject
  }

  private deliver(message: Message): void {
    const entry = this.registered.get(message.topic)
    const decoded = this.decoded.get(message)
    if (entry === undefined || decoded === undefined || message.type !== 'signed') return
    const { counters } = this.components
    counters.received++
    counters.topic(message.topic).received++
    const peerId = message.from.toString()
    const from = this.components.member(peerId)
    const meta: MessageMeta = { peerId, nodeId: decoded.nodeId, sentAt: decoded.sentAt }
    for (const handler of [...entry.handlers]) {
      try {
        handler(decoded.body, from, meta)
      } catch (error) {
        this.components.log('warn', 'a topic handler threw', { topic: message.topic, error: String(error) })
      }
    }
  }
}
