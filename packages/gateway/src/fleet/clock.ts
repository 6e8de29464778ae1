/**
 * How far each peer's clock is from this node's (issue 40, item 2), so a propagation lag is not
 * clock skew. Every 30 s (and on join) each peer is asked its time: sent at t0, its time t1, back
 * at t2, it is ahead by about t1 - (t0 + t2) / 2. The sample with the shortest round trip wins; an
 * offset within half of it cannot be told from none.
 */
import type { Logger } from 'pino'
import type { Cluster } from '@switchboard/cluster'
import { clockResponse, digestRequest, PROTOCOLS } from './messages.ts'

const SAMPLES = 8
const EVERY_MS = 30_000

interface Sample {
  offsetMs: number
  roundTripMs: number
}

/** The offsets of peers' clocks, by node id, from round trips. */
export class PeerClocks {
  private readonly samples = new Map<string, Sample[]>()

  /** One round trip to `nodeId`: asked at `sentAt`, answered with `peerAt`, back at `receivedAt` (this node's clock). */
  sample(nodeId: string, sentAt: number, peerAt: number, receivedAt: number): void {
    const roundTripMs = Math.max(0, receivedAt - sentAt)
    const list = this.samples.get(nodeId) ?? []
    list.push({ offsetMs: peerAt - (sentAt + receivedAt) / 2, roundTripMs })
    if (list.length > SAMPLES) list.shift()
    this.samples.set(nodeId, list)
  }

  /** How far `nodeId`'s clock is ahead of this node's (ms; negative when behind); 0 while unknown. */
  offset(nodeId: string): number {
    const list = this.samples.get(nodeId)
    if (list === undefined || list.length === 0) return 0
    let best = list[0]!
    for (const sample of list) if (sample.roundTripMs < best.roundTripMs) best = sample
    // Within half the round trip, the estimate cannot tell the clocks apart: taken as the same.
    return Math.abs(best.offsetMs) <= best.roundTripMs / 2 ? 0 : best.offsetMs
  }

  /** When `at` by `nodeId`'s clock was by this node's. */
  toLocal(nodeId: string, at: number): number {
    return at - this.offset(nodeId)
  }

  /** The largest offset, either way, among the peers sampled (ms). */
  widest(): number {
    let widest = 0
    for (const nodeId of this.samples.keys()) widest = Math.max(widest, Math.abs(this.offset(nodeId)))
    return widest
  }

  forget(nodeId: string): void {
    this.samples.delete(nodeId)
  }
}

/** Answers peers' clock questions and samples each peer's clock now and then. */
export async function carryClock(fleet: Cluster, init: { clocks: PeerClocks; now: () => number; logger: Logger }): Promise<{ stop(): void }> {
  const { clocks, now } = init
  await fleet.handle(PROTOCOLS.clock, digestRequest, clockResponse, async () => ({ at: now() }))
  const ask = async (member: { peerId: string; nodeId: string }) => {
    const sentAt = now()
    const answer = await fleet.request(member.peerId, PROTOCOLS.clock, {}, clockResponse, { timeoutMs: 2_000 })
    clocks.sample(member.nodeId, sentAt, answer.at, now())
  }
  const askAll = () => {
    for (const member of fleet.members()) if (!member.self) ask(member).catch((error: unknown) => init.logger.debug({ err: error, peer: member.nodeId }, 'could not ask a peer its time'))
  }
  const offJoin = fleet.on('member:join', (member) => {
    if (!member.self) ask(member).catch(() => {})
  })
  const offLeave = fleet.on('member:leave', (member) => clocks.forget(member.nodeId))
  const timer = setInterval(askAll, EVERY_MS)
  timer.unref()
  askAll()
  return {
    stop() {
      clearInterval(timer)
      offJoin()
      offLeave()
    },
  }
}
