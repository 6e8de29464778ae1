/** Counters the cluster keeps for `/metrics`. */

/** Counters of one gossip topic. */
export interface TopicCounters {
  published: number
  received: number
  invalid: number
  oversized: number
}

/** Gauges read when asked: messages waiting in the publish queue, open libp2p connections, live members (self included). */
interface Gauges {
  queued: number
  connections: number
  members: number
}

/** A snapshot of the cluster's counters and gauges. */
export type ClusterStats = Pick<Counters, 'dropped' | 'published' | 'received' | 'gossip' | 'requests'> & Gauges & { topics: Record<string, TopicCounters> }

/** The mutable counters behind `stats()`. */
export class Counters {
  /**
   * Messages thrown away, by why, each also counted under its topic: `invalid` (not JSON, not an
   * envelope, or refused by the schema; gossip and requests), `oversized` (over the topic's
   * `maxBytes`), `queueFull` (refused by `publish`: the local publish queue was full).
   */
  readonly dropped = { invalid: 0, oversized: 0, queueFull: 0 }
  /** Requests this node answered / sent, those that failed either way, and the bytes of the responses it received. */
  readonly requests = { served: 0, sent: 0, failed: 0, responseBytes: 0 }
  published = 0
  received = 0
  /** Gossip messages that reached this node, duplicates included (`received` counts each once), and their payload bytes. */
  readonly gossip = { frames: 0, bytes: 0 }
  readonly topics = new Map<string, TopicCounters>()

  /** The counters of `topic`, created at zero. */
  topic(topic: string): TopicCounters {
    let counters = this.topics.get(topic)
    if (counters === undefined) this.topics.set(topic, (counters = { published: 0, received: 0, invalid: 0, oversized: 0 }))
    return counters
  }

  /** A copy, with the gauges the caller measured. */
  snapshot(gauges: Gauges): ClusterStats {
    const topics = Object.fromEntries([...this.topics].map(([name, counters]) => [name, { ...counters }]))
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
