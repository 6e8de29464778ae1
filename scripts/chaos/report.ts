/**
 * The chaos run's report as markdown tables: requests per node, holds around each restart,
 * traffic to held keys, and the three verdicts of issue 7's "Done when".
 */
import type { ChaosResult } from './chaos.ts'
import type { NodeTally } from './traffic.ts'

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

function failedText(failed: Record<string, number>): string {
  const entries = Object.entries(failed).sort(([left], [right]) => left.localeCompare(right))
  return entries.length === 0 ? '0' : entries.map(([status, count]) => `${count} × ${status}`).join(', ')
}

function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

/** The whole report. `command` is how the run was started, shown above the tables. */
export function renderReport(result: ChaosResult, command: string): string {
  const { options } = result
  const at = (epochMs: number) => seconds(epochMs - result.startedAt)
  const out: string[] = []
  out.push(`## Chaos run: ${result.nodes.length} nodes, ${seconds(options.durationMs)}, a SIGKILL every ${seconds(options.killEveryMs)}`)
  out.push('')
  out.push(`\`${command}\` on ${new Date(result.startedAt).toISOString()}; ${options.ratePerSecond} requests/s, seed ${options.seed}, killed nodes down ${seconds(options.pauseMs)} before their restart, run took ${seconds(result.finishedAt - result.startedAt)}${result.stoppedEarly ? ' (stopped early)' : ''}.`)
  out.push('')

  out.push('### Requests per node')
  out.push('')
  const total: NodeTally = { sent: 0, served: 0, failed: {}, unreachable: 0, cutByKill: 0, noAnswer: 0, unclear: 0 }
  const rows = result.nodes.map((nodeId) => {
    const tally = result.traffic[nodeId] ?? { ...total, failed: {} }
    total.sent += tally.sent
    total.served += tally.served
    total.unreachable += tally.unreachable
    total.cutByKill += tally.cutByKill
    total.noAnswer += tally.noAnswer
    total.unclear += tally.unclear
    for (const [status, count] of Object.entries(tally.failed)) total.failed[status] = (total.failed[status] ?? 0) + count
    return [nodeId, tally.sent, tally.served, failedText(tally.failed), tally.unreachable, tally.cutByKill, tally.noAnswer, tally.unclear]
  })
  rows.push(['**all**', total.sent, total.served, failedText(total.failed), total.unreachable, total.cutByKill, total.noAnswer, total.unclear])
  out.push(table(['node', 'sent', 'served', 'failed with a JSON error (by status)', 'unreachable (node down)', 'cut by the SIGKILL', 'no answer from a live node', 'unclear answer'], rows))
  out.push('')

  out.push('### Holds around each restart')
  out.push('')
  out.push('Holds listed by `GET /api/adaptive-routing/conditions`: the killed node\'s and the fleet\'s (distinct holds over the live nodes) just before the SIGKILL, and again at the restarted node\'s first answer. Snapshot age: how old the hold set in Postgres was at the kill (`GET /api/cluster`, `last_snapshot`).')
  out.push('')
  out.push(
    table(
      ['#', 'node', 'killed at', 'snapshot age', 'back after', 'node before', 'fleet before', 'node after', 'fleet after', 'released meanwhile', 'only on the killed node', 'resurrected', 'lost'],
      result.restarts.map((restart, index) => [
        index + 1,
        restart.nodeId,
        at(restart.killedAt),
        restart.snapshotAgeMs === null ? 'none' : seconds(restart.snapshotAgeMs),
        seconds(restart.backAt - restart.killedAt),
        restart.nodeBefore,
        restart.fleetBefore,
        restart.nodeAfter,
        restart.fleetAfter,
        restart.releasedMeanwhile,
        restart.onlyOnKilledNode,
        restart.resurrected,
        restart.lost.length === 0 ? 0 : restart.lost.map((hold) => `${hold.keyName ?? '?'}${hold.model ? `/${hold.model}` : ''}${hold.wasDue ? ' (due)' : ''}`).join(', '),
      ]),
    ),
  )
  out.push('')

  const held = result.heldTraffic
  out.push('### Requests to held keys')
  out.push('')
  out.push('From the simulator\'s log: every request to a held key after its hold began, matched against the check slots the nodes showed (one per node and due time); see the rule in scripts/chaos/README.md.')
  out.push('')
  out.push(
    table(
      ['key', 'model', 'reason', 'held from', 'until', 'rung reached', 'checks (renewals)', 'requests to it', 'of which checks', 'before due time'],
      held.episodes.map((episode) => [
        episode.keyName ?? '?',
        episode.model ?? 'all',
        episode.reason,
        at(episode.since),
        at(episode.end),
        episode.highestRung,
        episode.highestChecks,
        episode.examined,
        episode.checks,
        episode.early,
      ]),
    ),
  )
  out.push('')
  out.push(`${held.episodes.length} holds; ${held.raced} requests raced a hold (ended within 1 s of its start: in flight when it was placed); ${held.everyKeyHeld} sent while every key was held (allowed); ${held.examined} requests examined, ${held.checks} of them checks, **${held.early.length} before their due time**.${held.unknownKeys.length ? ` Keys the run could not map to the simulator's log: ${held.unknownKeys.join(', ')}.` : ''}${result.upstreamLogGap ? ' The simulator\'s log overflowed between two fetches: counts may be low.' : ''}`)
  out.push('')
  for (const early of held.early.slice(0, 20)) {
    out.push(`- ${early.keyName ?? '?'}${early.model ? `/${early.model}` : ''}: status ${early.status} at ${at(early.at)}, ${seconds(early.afterSinceMs)} after the hold began${early.earliestDueAt === null ? '' : `, earliest due ${at(early.earliestDueAt)}`}`)
  }
  if (held.early.length > 0) out.push('')

  if (result.incidents.length > 0) {
    out.push('### Incidents')
    out.push('')
    for (const incident of result.incidents) out.push(`- ${at(incident.at)}: ${incident.nodeId} ${incident.what}`)
    out.push('')
  }
  if (result.unanswered.length > 0) {
    out.push('### Requests a live node did not answer clearly')
    out.push('')
    for (const sample of result.unanswered.slice(0, 20)) out.push(`- ${sample.nodeId} at ${at(sample.at)}: ${sample.kind}: ${sample.detail.replaceAll('\n', ' ')}`)
    out.push('')
  }

  const { verdict } = result
  const mark = (ok: boolean) => (ok ? 'yes' : '**NO**')
  out.push('### Verdict')
  out.push('')
  out.push(`- No hold lost across restarts: ${mark(verdict.holdsLost === 0)} (${verdict.holdsLost} lost over ${result.restarts.length} restarts)`)
  out.push(`- No hold resurrected by a restart: ${mark(verdict.holdsResurrected === 0)} (${verdict.holdsResurrected})`)
  out.push(`- No request sent to a held key before its due time: ${mark(verdict.earlyRequests === 0)} (${verdict.earlyRequests})`)
  out.push(`- Every request that reached a live node answered (served, or a clear JSON error): ${mark(verdict.unanswered === 0 && verdict.unclear === 0)} (${verdict.unanswered} without an answer, ${verdict.unclear} unclear)`)
  out.push(`- Every node restarted, none crashed: ${mark(verdict.incidents === 0)}${verdict.incidents > 0 ? ` (${verdict.incidents} incidents above)` : ''}`)
  return out.join('\n')
}
