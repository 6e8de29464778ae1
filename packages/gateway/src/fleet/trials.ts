/**
 * The fleet's trial rounds (issue 35, item 8) on the wire: the `trials` topic, the join pull
 * (`trials/snapshot/1`), and the peer count routing needs. Routing decides; this carries rounds
 * both ways and counts what it drops.
 */
import type { Cluster } from '@switchboard/cluster'
import type { TrialEntry } from '@switchboard/routing'
import type { FleetComponents } from './fleet.ts'
import { digestRequest, parseTrialEntry, plausibleTrial, PROTOCOLS, trialBatch, trialToWire } from './messages.ts'

/** `knownKey`: false for a key this node does not have (its rounds are dropped and counted). */
export type TrialsCarrierInit = Pick<FleetComponents, 'trials' | 'dispatcher' | 'metrics' | 'logger' | 'now' | 'knownKey'>

/** The trial rounds' share of the fleet. */
export interface TrialsCarrier {
  publish(entries: readonly TrialEntry[]): void
  /** Pulls the rounds from `peerId` on join, so a route failing here joins the round in progress. */
  pull(peerId: string): Promise<void>
}

/** Subscribes to the `trials` topic, serves the join pull, and tracks the peer count. */
export async function carryTrials(fleet: Cluster, init: TrialsCarrierInit): Promise<TrialsCarrier> {
  const { trials, metrics, logger } = init
  /** Takes trial rounds from a peer: each checked, bad ones counted; routing applies the rest (a served one recovers routes here). */
  const take = (raw: readonly unknown[]) => {
    const entries: TrialEntry[] = []
    const at = init.now()
    for (const value of raw) {
      const entry = parseTrialEntry(value)
      if (entry === null) metrics.clusterDropped.inc({ reason: 'invalid_trial' })
      else if (!plausibleTrial(entry, at)) metrics.clusterDropped.inc({ reason: 'implausible_trial' })
      else if (init.knownKey && !init.knownKey(entry.provider, entry.keyId)) metrics.clusterDropped.inc({ reason: 'unknown_key' })
      else entries.push(entry)
    }
    if (entries.length > 0) init.dispatcher.mergeTrials(entries)
  }
  // Fleet-wide, so one node per due time tries a failed route and its success recovers it everywhere.
  const topic = fleet.topic('trials', trialBatch, { scope: 'fleet', maxBytes: 1024 * 1024 })
  topic.subscribe((message, _from, meta) => {
    if (meta.peerId !== fleet.peerId) take(message.entries)
  })
  const peersChanged = () => trials.setPeers(fleet.members().filter((member) => !member.self).length)
  fleet.on('member:join', peersChanged)
  fleet.on('member:leave', peersChanged)
  peersChanged()
  await fleet.handle(PROTOCOLS.trials, digestRequest, trialBatch, async () => ({ entries: trials.entries().map(trialToWire) }))
  return {
    publish(entries) {
      topic.publish({ entries: entries.map(trialToWire) }).catch((error: unknown) => logger.warn({ err: error }, 'could not publish trial rounds'))
    },
    async pull(peerId) {
      try {
        take((await fleet.request(peerId, PROTOCOLS.trials, {}, trialBatch)).entries)
      } catch (error) {
        logger.debug({ err: error, peerId }, 'could not pull the trial rounds on join; gossip brings them')
      }
    },
  }
}
