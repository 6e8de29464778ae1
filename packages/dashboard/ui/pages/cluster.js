// Cluster: this node, every member the node sees (so: who is up), regions, their leaders, the
// last snapshot of the held keys, and what gossip dropped. All from GET /api/cluster.
import { html } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { relative, stamp } from '../lib/format.js'
import { clusterTitle, droppedText, gossipRows, lagText, ms, PROPAGATION_KINDS } from '../lib/cluster.js'
import { Card, ErrorNotice } from '../components/notice.js'

/**
 * The Cluster page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function ClusterPage({ context }) {
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').ClusterAnswer>} */
  const cluster = useApi('/api/cluster', [context.tick, context.version])
  const view = cluster.data
  const leaders = view ? new Set(Object.values(view.leaders)) : new Set()
  return html`<div class="page cluster">
    <${ErrorNotice} error=${cluster.error} what="Cluster" />
    ${view
      ? html`
        <${Card} title=${clusterTitle(view)} testid="members">
          <table class="table">
            <thead><tr><th>Node</th><th>Region</th><th>Role</th><th>Up since</th><th>Last seen</th><th>Addresses</th></tr></thead>
            <tbody>${view.members.map((member) => html`<tr key=${member.node_id} data-testid="member">
              <td><span class="dot up" title="up"></span><strong>${member.node_id}</strong>${member.node_id === view.node.node_id ? html` <span class="tag">this node</span>` : null}</td>
              <td>${member.region}</td>
              <td>${leaders.has(member.node_id) ? html`<span class="tag leader">leader of ${member.region}</span>` : 'member'}</td>
              <td title=${stamp(member.since)}>${relative(member.since, context.now)}</td>
              <td title=${stamp(member.last_seen)}>${relative(member.last_seen, context.now)}</td>
              <td class="mono muted small">${member.addresses.join(' ')}</td>
            </tr>`)}</tbody>
          </table>
        </${Card}>
        <div class="grid two">
          <${Card} title="Regions and leaders" testid="regions">
            <dl class="facts">${Object.entries(view.regions).map(([region, nodes]) => html`<dt>${region}</dt><dd>${nodes.join(', ')} · leader <strong>${view.leaders[region] ?? 'none'}</strong></dd>`)}</dl>
          </${Card}>
          <${Card} title="Held keys snapshot" testid="snapshot">
            <dl class="facts">
              <dt>Holds in the fleet</dt><dd>${view.holds}</dd>
              <dt>Last snapshot</dt><dd>${view.last_snapshot ? html`${relative(view.last_snapshot.taken_at, context.now)} by ${view.last_snapshot.node_id} (${view.last_snapshot.entries} entries)` : 'none yet'}</dd>
              <dt>Gossip dropped</dt><dd>${droppedText(view.dropped)}</dd>
            </dl>
          </${Card}>
        </div>
        ${view.signals ? html`<${FleetHealth} signals=${view.signals} />` : null}`
      : null}
  </div>`
}

/**
 * How fast changes reach this node, what gossip carried, what syncs repaired (issue 40).
 * @param {{ signals: import('../lib/answers').FleetSignals }} props
 */
function FleetHealth({ signals }) {
  return html`<div class="grid two">
    <${Card} title="Propagation to this node (p50 / p99)" testid="propagation">
      <dl class="facts">
        ${PROPAGATION_KINDS.map(([kind, label]) => html`<dt>${label}</dt><dd data-kind=${kind}>${lagText(signals.propagation[kind])} · ${signals.propagation[kind].count} seen</dd>`)}
        <dt>Repaired by anti-entropy</dt><dd>${signals.repaired['anti-entropy']} entries</dd>
        <dt>Repaired on join</dt><dd>${signals.repaired['sync on join']} entries</dd>
        <dt>Snapshot age</dt><dd>${signals.snapshot_age_s === null ? 'none yet' : ms(signals.snapshot_age_s * 1000)}</dd>
        <dt>Widest clock offset</dt><dd>${ms(signals.clock_offset_max_ms)}</dd>
      </dl>
    </${Card}>
    <${Card} title="Gossip by topic" testid="gossip">
      <table class="table">
        <thead><tr><th>Topic</th><th>In</th><th>Out</th><th>Dropped</th></tr></thead>
        <tbody>${gossipRows(signals.gossip).map(([topic, counts]) => html`<tr key=${topic} data-testid="gossip-topic"><td class="mono">${topic}</td><td>${counts.in}</td><td>${counts.out}</td><td>${counts.dropped}</td></tr>`)}</tbody>
      </table>
    </${Card}>
  </div>`
}
