// Request log: every request the fleet served, filtered as GET /api/logs filters (the adaptive
// routing ones included), and one request's routing summary in words.
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { reasonLabel, stamp } from '../lib/format.js'
import { ErrorNotice, MissingApi, Card } from '../components/notice.js'
import { Facets, chosen, toggled } from '../components/facets.js'
import { LogDetail } from '../components/log-detail.js'

const LOGS = '/api/logs'
const PAGE = 50
const FLAGS = [
  ['moved_off', 'Moved off', 'Routing moved it off the provider it named'],
  ['check', 'Checked a held key', 'It was the check of a held key'],
  ['added_fallback', 'Served by an added fallback', 'A fallback that routing added served it'],
]
const LIST_FILTERS = ['providers', 'models', 'status', 'failure_classes', 'nodes', 'picked_by', 'key_ids']
const SORTS = [['newest', 'Newest'], ['oldest', 'Oldest'], ['slowest', 'Slowest'], ['fastest', 'Fastest'], ['most_tokens', 'Most tokens']]

/** The API query of the route: the window, then every filter param as the API names it. */
export function logQuery(params, window) {
  const query = { from: window.from, to: window.to, limit: PAGE, offset: params.log_offset ?? 0, sort: params.log_sort, search: params.log_search, session_id: params.session_id, request_id: params.request_id }
  for (const name of LIST_FILTERS) query[name] = params[`log_${name}`]
  for (const [name] of FLAGS) query[name] = params[name]
  return query
}

export function LogsPage({ context }) {
  const { route, window } = context
  const params = route.params
  // The question without the clock: a Live tick moves the window's times, not the filters.
  const question = withQuery(LOGS, logQuery(params, window.name === 'custom' ? window : { from: window.name, to: null }))
  const page = useApi(withQuery(LOGS, logQuery(params, window)), [context.tick, context.version], question)
  if (page.error?.status === 404 && !page.data) return html`<${MissingApi} path=${LOGS} what="The request log" />`
  const set = (changes) => navigate('logs', { ...changes, log_offset: changes.log_offset ?? null }, route.id)
  const data = page.data
  const logs = data?.logs ?? []
  const facets = data?.facets ?? {}
  const index = logs.findIndex((entry) => entry.id === route.id)
  const open = (id) => navigate('logs', {}, id)
  const keyName = (id) => data?.key_names?.[id] ?? id
  return html`<div class="page logs">
    <${ErrorNotice} error=${page.error} what="Request log" />
    ${data?.request_log_enabled === false ? html`<div class="notice missing">The request log is off on this node (request_log.enabled); older entries are still shown.</div>` : null}
    <div class="layout-side">
      <${Facets} selected=${(name) => chosen(params, `log_${name}`)} onToggle=${(name, value) => set({ [`log_${name}`]: toggled(params, `log_${name}`, value) })}
        groups=${[
          ['providers', 'Provider', facets.providers],
          ['models', 'Model', facets.models],
          ['status', 'Status', facets.status],
          ['failure_classes', 'Failure', facets.failure_classes, (value) => (value === 'none' ? 'none (served)' : reasonLabel(value))],
          ['picked_by', 'Provider picked by', facets.picked_by],
          ['key_ids', 'Key', facets.key_ids, keyName],
          ['nodes', 'Node', facets.nodes],
        ]} />
      <div>
        <div class="toolbar">
          <input type="search" name="log_search" placeholder="Search provider, model, key, message" value=${params.log_search ?? ''}
            onChange=${(event) => set({ log_search: event.currentTarget.value })} />
          ${FLAGS.map(([name, label, explain]) => html`<label key=${name} title=${explain}>
            <input type="checkbox" name=${name} checked=${params[name] === 'true'} onChange=${(event) => set({ [name]: event.currentTarget.checked ? 'true' : null })} />
            ${label}${facets[name]?.true !== undefined ? html` <span class="muted">(${facets[name].true})</span>` : null}
          </label>`)}
          <span class="spacer"></span>
          <label>Sort <select name="log_sort" value=${params.log_sort ?? 'newest'} onChange=${(event) => set({ log_sort: event.currentTarget.value })}>
            ${SORTS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
          </select></label>
        </div>
        <${Card} title=${!data ? 'Requests' : page.current ? `${data.total} request${data.total === 1 ? '' : 's'}` : 'Requests (updating for the new filters…)'} testid="logs" busy=${!page.current} query=${page.query ?? undefined}>
          ${logs.length === 0 ? html`<p class="empty">No request in this window matches.</p>` : html`<table class="table">
            <thead><tr><th>Time</th><th>Node</th><th>Asked for</th><th>Served by</th><th>Status</th><th class="num">Latency</th><th class="num">Tokens</th><th>Routing</th></tr></thead>
            <tbody>${logs.map((entry) => html`<tr key=${entry.id} class=${`clickable${entry.id === route.id ? ' selected' : ''}`} data-testid="log-row" data-id=${entry.id} onClick=${() => open(entry.id)}>
              <td title=${entry.id}>${stamp(entry.at)}</td>
              <td>${entry.node_id}</td>
              <td>${entry.requested.provider ? `${entry.requested.provider}/` : ''}${entry.requested.model}</td>
              <td>${entry.served.provider ? html`${entry.served.provider}/${entry.served.model} <span class="muted">· ${entry.served.key_name}</span>` : '—'}</td>
              <td><span class=${`badge ${entry.status < 400 ? 'state-healthy' : entry.status >= 500 ? 'state-failed' : 'state-degraded'}`}>${entry.status}</span></td>
              <td class="num">${entry.latency_ms} ms</td>
              <td class="num">${entry.usage?.total_tokens ?? '—'}</td>
              <td>${routingTags(entry.routing)}</td>
            </tr>`)}</tbody>
          </table>`}
          ${data && data.total > PAGE ? html`<div class="pager">
            <span class="muted">${data.offset + 1}–${Math.min(data.offset + logs.length, data.total)} of ${data.total}</span>
            <button class="secondary" disabled=${data.offset === 0} onClick=${() => set({ log_offset: Math.max(0, data.offset - PAGE) })}>Newer</button>
            <button class="secondary" disabled=${data.offset + PAGE >= data.total} onClick=${() => set({ log_offset: data.offset + PAGE })}>Older</button>
          </div>` : null}
        </${Card}>
      </div>
    </div>
    ${route.id ? html`<${LogDetail} id=${route.id} context=${context}
      onClose=${() => navigate('logs', {}, null)}
      onPrevious=${index > 0 ? () => open(logs[index - 1].id) : index === -1 ? undefined : null}
      onNext=${index >= 0 && index < logs.length - 1 ? () => open(logs[index + 1].id) : index === -1 ? undefined : null} />` : null}
  </div>`
}

function routingTags(routing) {
  const tags = []
  if (routing.moved_off) tags.push(html`<span class="tag attention" title=${`moved off ${routing.moved_off.provider}: ${routing.moved_off.reason}`}>moved off ${routing.moved_off.provider}</span>`)
  if (routing.check) tags.push(html`<span class="tag" title=${`checked held key ${routing.check.key_name}: ${routing.check.outcome}`}>check · ${routing.check.outcome.replace('_', ' ')}</span>`)
  if (routing.added_fallback_served) tags.push(html`<span class="tag">added fallback</span>`)
  if (routing.skipped_keys.length > 0) tags.push(html`<span class="tag" title=${routing.skipped_keys.map((key) => `${key.key_name}: ${reasonLabel(key.reason)}`).join(', ')}>skipped ${routing.skipped_keys.length}</span>`)
  tags.push(html`<span class="muted small"> ${routing.picked_by === 'routing' ? 'routing picked' : 'caller named'}</span>`)
  return tags
}
