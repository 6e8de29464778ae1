// Adaptive Routing > Incidents (reference: "Incidents"): the four figures, the table, the sidebar
// filters with a count per value, search, sort, and a detail sheet with Previous and Next. It
// shares the dashboard's window, Live mode and filters (they live in the URL).
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { duration, reasonLabel, stamp, STATE_LABELS } from '../lib/format.js'
import { ErrorNotice, MissingApi, Card } from '../components/notice.js'
import { Facets, chosen, toggled } from '../components/facets.js'
import { IncidentDetail, STATUS_LABELS } from '../components/incident-detail.js'

const ISSUES = '/api/adaptive-routing/history/issues'
const PAGE = 25
export const FILTERS = ['statuses', 'providers', 'models', 'reasons', 'states', 'scopes', 'regions', 'nodes']
const SORTS = [['priority', 'Needs attention first'], ['newest', 'Newest'], ['oldest', 'Oldest'], ['longest', 'Longest'], ['shortest', 'Shortest']]
const OPEN_STATUSES = 'attention,recovering,mitigated,waiting'
const SCOPES = { route: 'a key on a model', direction: 'a provider and model', key: 'a key on every model' }
const ACTIONS = { held: 'held the key', moved_traffic: 'moved traffic off', reduced_traffic: 'gave it less traffic' }

export function IncidentsPage({ context }) {
  const { route, window } = context
  const params = route.params
  const query = { from: window.from, to: window.to, limit: PAGE, offset: params.inc_offset ?? 0, sort: params.sort, search: params.search }
  for (const name of FILTERS) query[name] = params[name]
  const filtered = FILTERS.some((name) => params[name]) || Boolean(params.search)
  // The question without the clock (a Live tick moves the window's times, not the filters).
  const page = useApi(withQuery(ISSUES, query), [context.tick, context.version], withQuery(ISSUES, { ...query, from: window.name === 'custom' ? window.from : window.name, to: window.name === 'custom' ? window.to : null }))
  // With a filter on, the window's own total, for "out of N" (the same API, unfiltered).
  const all = useApi(filtered ? withQuery(ISSUES, { from: window.from, to: window.to, limit: 1, offset: 0 }) : null, [context.tick, context.version])
  if (page.error?.status === 404 && !page.data) return html`<${MissingApi} path=${ISSUES} what="Incidents" />`
  const data = page.data
  const issues = data?.issues ?? []
  const set = (changes) => navigate('incidents', { ...changes, inc_offset: changes.inc_offset ?? null }, route.id)
  const index = issues.findIndex((incident) => incident.id === route.id)
  const open = (id) => navigate('incidents', {}, id)
  const summary = data?.matched_summary
  const keyName = (id) => data?.key_names?.[id] ?? id
  const where = (incident) => `${incident.provider} · ${incident.models.join(', ') || 'every model'}${incident.key_ids.length ? ` · ${incident.key_ids.map(keyName).join(', ')}` : ''}`
  return html`<div class="page incidents">
    <${ErrorNotice} error=${page.error} what="Incidents" />
    ${summary ? html`<div class="grid four figures">
      <button class="figure" data-testid="figure-incidents" onClick=${() => set(Object.fromEntries([...FILTERS, 'search'].map((name) => [name, null])))}>
        <div class="value">${data.total}</div><div class="label">Incidents</div>
        <div class="sub">${filtered && all.data ? `out of ${all.data.total} in the window` : 'in the window'}</div></button>
      <button class="figure" data-testid="figure-attention" onClick=${() => set({ statuses: 'attention' })}>
        <div class="value">${summary.attention}</div><div class="label">Needs attention</div><div class=${`sub${summary.attention ? ' bad' : ''}`}>waiting on an operator</div></button>
      <div class="figure"><div class="value">${summary.median_resolve_seconds === null ? '—' : duration(summary.median_resolve_seconds)}</div><div class="label">Median time to resolve</div><div class="sub">${summary.resolved} resolved</div></div>
      <button class="figure" data-testid="figure-longest" onClick=${() => set({ statuses: OPEN_STATUSES, sort: 'longest' })}>
        <div class="value">${summary.longest_ongoing_seconds === null ? '—' : duration(summary.longest_ongoing_seconds)}</div><div class="label">Longest ongoing</div><div class="sub">${summary.ongoing} ongoing</div></button>
    </div>` : null}
    <div class="layout-side">
      <${Facets} selected=${(name) => chosen(params, name)} onToggle=${(name, value) => set({ [name]: toggled(params, name, value) })}
        groups=${[
          ['statuses', 'Status', data?.facets?.statuses, (value) => STATUS_LABELS[value] ?? value],
          ['providers', 'Provider', data?.facets?.providers],
          ['models', 'Model', data?.facets?.models],
          ['reasons', 'Reason', data?.facets?.reasons, reasonLabel],
          ['states', 'Worst state', data?.facets?.states, (value) => STATE_LABELS[value] ?? value],
          ['scopes', 'Scope', data?.facets?.scopes, (value) => SCOPES[value] ?? value],
          ['regions', 'Region', data?.facets?.regions],
          ['nodes', 'Node', data?.facets?.nodes],
        ]} />
      <div>
        <div class="toolbar">
          <input type="search" name="search" placeholder="Search provider, model or key" value=${params.search ?? ''} onChange=${(event) => set({ search: event.currentTarget.value })} />
          <span class="spacer"></span>
          <label>Sort <select name="sort" value=${params.sort ?? 'priority'} onChange=${(event) => set({ sort: event.currentTarget.value })}>
            ${SORTS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
        </div>
        <${Card} title=${page.current || !data ? 'Incidents' : 'Incidents (updating for the new filters…)'} testid="incidents" busy=${!page.current} query=${page.query ?? undefined}>
          ${issues.length === 0 ? html`<p class="empty">${data ? 'No incident in this window matches.' : 'Loading…'}</p>` : html`<table class="table">
            <thead><tr><th>Opened</th><th>Duration</th><th>Status</th><th>Where</th><th>Cause</th></tr></thead>
            <tbody>${issues.map((incident) => html`<tr key=${incident.id} class=${`clickable${incident.id === route.id ? ' selected' : ''}`} data-testid="incident-row" data-id=${incident.id} data-status=${incident.status} onClick=${() => open(incident.id)}>
              <td>${stamp(incident.opened_at)}</td>
              <td>${duration(incident.duration_seconds)}${incident.closed_at === null ? html` <span class="muted">ongoing</span>` : null}</td>
              <td><span class=${`tag status-${incident.status}${incident.status === 'attention' ? ' attention' : ''}`}>${STATUS_LABELS[incident.status] ?? incident.status}</span></td>
              <td>${where(incident)}</td>
              <td>${incident.reasons.map(reasonLabel).join(', ') || STATE_LABELS[incident.worst_state]}; routing ${ACTIONS[incident.action] ?? incident.action}${incident.checks ? `, checked ${incident.checks} time${incident.checks === 1 ? '' : 's'}` : ''}</td>
            </tr>`)}</tbody>
          </table>`}
          ${data && data.total > PAGE ? html`<div class="pager"><span class="muted">${data.offset + 1}–${data.offset + issues.length} of ${data.total}</span>
            <button class="secondary" disabled=${data.offset === 0} onClick=${() => set({ inc_offset: Math.max(0, data.offset - PAGE) })}>Previous page</button>
            <button class="secondary" disabled=${data.offset + PAGE >= data.total} onClick=${() => set({ inc_offset: data.offset + PAGE })}>Next page</button></div>` : null}
        </${Card}>
      </div>
    </div>
    ${route.id ? html`<${IncidentDetail} id=${route.id} context=${context}
      onClose=${() => navigate('incidents', {}, null)}
      onPrevious=${index > 0 ? () => open(issues[index - 1].id) : null}
      onNext=${index >= 0 && index < issues.length - 1 ? () => open(issues[index + 1].id) : null} />` : null}
  </div>`
}
