/** Counters the cluster keeps for `/metrics`. */

/** Counters of one gossip topic. */
export interface TopicCounters {
  published: number
  received: number
  invalid: number
  oversized: number
}

/** A snapshot of the cluster's counters and gauges. */
export interface ClusterStats {
  /** Messages thrown away, by why; each also counted under its topic. */
  dropped: {
    /** Not JSON, not an envelope, or refused by the topic's schema (gossip and requests). */
    invalid: number
    /** Larger than the topic's `maxBytes`. */
    oversized: number
    /** Refused by `publish` because the local publish queue was full. */
    queueFull: number
  }
  published: number
  received: number
  /** Gossip messages that reached this node, duplicates included (`received` counts each once), and their payload bytes. */
  gossip: { frames: number; bytes: number }
  /** Requests this node answered / sent, those that failed either way, and the bytes of the responses it received. */
  requests: { served: number; sent: number; failed: number; responseBytes: number }
  /** Messages waiting in the publish queue now. */
  queued: number
  /** Open libp2p connections now. */
  connections: number
  /** Live members now, self included. */
  members: number
  topics: Record<string, TopicCounters>
}

/** The mutable counters behind `stats()`. */
export class Counters {
  readonly dropped = { invalid: 0, oversized: 0, queueFull: 0 }
  readonly requests = { served: 0, sent: 0, failed: 0, responseBytes: 0 }
  published = 0
  received = 0
  readonly gossip = { frames: 0, bytes: 0 }
  readonly topics = new Map<string, TopicCounters>()

  /** The counters of `topic`, created at zero. */
  topic(topic: string): TopicCounters {
    let counters = this.topics.get(topic)
    if (counters === undefined) this.topics.set(topic, (counters = { published: 0, received: 0, invalid: 0, oversized: 0 }))
    return counters
  }

  /** A copy, with the gauges the caller measured. */
  snapshot(gauges: { queued: number; connections: number; members: number }): ClusterStats {
    const topics: Record<string, TopicCounters> = {}
    for (const [name, counters] of this.topics) topics[name] = { ...counters }
    return {
      dropped: { ...this.dropped },
      published: this.published,
      received: this.received,
      gossip: { ...this.gossip },
      requests: { ...this.requests },
      ...gauges,
      topics,
    }
  }
}
