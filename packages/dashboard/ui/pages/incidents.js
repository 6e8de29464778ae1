// Adaptive Routing > Incidents (reference: "Incidents"): the four figures, the table, the sidebar
// filters with a count per value, search, sort, and a detail sheet with Previous and Next. It
// shares the dashboard's window, Live mode and filters (they live in the URL).
import { html, inputValue } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { duration, labelOf, reasonLabel, stamp, stateLabel, STATUS_LABELS } from '../lib/format.js'
import { chosen, cleared, toggled } from '../lib/filters.js'
import { incidentCause, incidentPaths, incidentWhere, INCIDENT_FILTERS, INCIDENT_SORTS, INCIDENTS_PAGE, ISSUES_PATH, OPEN_STATUSES, SCOPES } from '../lib/incidents.js'
import { pageRange, pageSteps } from '../lib/paging.js'
import { ErrorNotice, MissingApi, Card } from '../components/notice.js'
import { Facets } from '../components/facets.js'
import { IncidentDetail } from '../components/incident-detail.js'

/**
 * The Incidents page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function IncidentsPage({ context }) {
  const { route, window } = context
  const params = route.params
  const paths = incidentPaths(params, window)
  // The question without the clock (a Live tick moves the window's times, not the filters).
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').IssuesAnswer>} */
  const page = useApi(paths.page, [context.tick, context.version], paths.question)
  // With a filter on, the window's own total, for "out of N" (the same API, unfiltered).
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').IssuesAnswer>} */
  const all = useApi(paths.all, [context.tick, context.version])
  if (page.error?.status === 404 && !page.data) return html`<${MissingApi} path=${ISSUES_PATH} what="Incidents" />`
  const data = page.data
  const issues = data?.issues ?? []
  const set = (/** @type {Record<string, unknown>} */ changes) => navigate('incidents', { ...changes, inc_offset: changes.inc_offset ?? null }, route.id)
  const index = issues.findIndex((incident) => incident.id === route.id)
  const open = (/** @type {string} */ id) => navigate('incidents', {}, id)
  const summary = data?.matched_summary
  const keyName = (/** @type {string} */ id) => data?.key_names?.[id] ?? id
  const steps = data ? pageSteps(data.offset, INCIDENTS_PAGE, data.total) : null
  return html`<div class="page incidents">
    <${ErrorNotice} error=${page.error} what="Incidents" />
    ${summary ? html`<div class="grid four figures">
      <button class="figure" data-testid="figure-incidents" onClick=${() => set(cleared([...INCIDENT_FILTERS, 'search']))}>
        <div class="value">${data?.total}</div><div class="label">Incidents</div>
        <div class="sub">${paths.filtered && all.data ? `out of ${all.data.total} in the window` : 'in the window'}</div></button>
      <button class="figure" data-testid="figure-attention" onClick=${() => set({ statuses: 'attention' })}>
        <div class="value">${summary.attention}</div><div class="label">Needs attention</div><div class=${`sub${summary.attention ? ' bad' : ''}`}>waiting on an operator</div></button>
      <div class="figure"><div class="value">${duration(summary.median_resolve_seconds)}</div><div class="label">Median time to resolve</div><div class="sub">${summary.resolved} resolved</div></div>
      <button class="figure" data-testid="figure-longest" onClick=${() => set({ statuses: OPEN_STATUSES, sort: 'longest' })}>
        <div class="value">${duration(summary.longest_ongoing_seconds)}</div><div class="label">Longest ongoing</div><div class="sub">${summary.ongoing} ongoing</div></button>
    </div>` : null}
    <div class="layout-side">
      <${Facets} selected=${(/** @type {string} */ name) => chosen(params, name)} onToggle=${(/** @type {string} */ name, /** @type {string} */ value) => set({ [name]: toggled(params, name, value) })}
        groups=${[
          ['statuses', 'Status', data?.facets?.statuses, (/** @type {string} */ value) => labelOf(STATUS_LABELS, value)],
          ['providers', 'Provider', data?.facets?.providers],
          ['models', 'Model', data?.facets?.models],
          ['reasons', 'Reason', data?.facets?.reasons, reasonLabel],
          ['states', 'Worst state', data?.facets?.states, stateLabel],
          ['scopes', 'Scope', data?.facets?.scopes, (/** @type {string} */ value) => labelOf(SCOPES, value)],
          ['regions', 'Region', data?.facets?.regions],
          ['nodes', 'Node', data?.facets?.nodes],
        ]} />
      <div>
        <div class="toolbar">
          <input type="search" name="search" placeholder="Search provider, model or key" value=${params.search ?? ''} onChange=${(/** @type {Event} */ event) => set({ search: inputValue(event) })} />
          <span class="spacer"></span>
          <label>Sort <select name="sort" value=${params.sort ?? 'priority'} onChange=${(/** @type {Event} */ event) => set({ sort: inputValue(event) })}>
            ${INCIDENT_SORTS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
        </div>
        <${Card} title=${page.current || !data ? 'Incidents' : 'Incidents (updating for the new filters…)'} testid="incidents" busy=${!page.current} query=${page.query ?? undefined}>
          ${issues.length === 0 ? html`<p class="empty">${data ? 'No incident in this window matches.' : 'Loading…'}</p>` : html`<table class="table">
            <thead><tr><th>Opened</th><th>Duration</th><th>Status</th><th>Where</th><th>Cause</th></tr></thead>
            <tbody>${issues.map((incident) => html`<tr key=${incident.id} class=${`clickable${incident.id === route.id ? ' selected' : ''}`} data-testid="incident-row" data-id=${incident.id} data-status=${incident.status} onClick=${() => open(incident.id)}>
              <td>${stamp(incident.opened_at)}</td>
              <td>${duration(incident.duration_seconds)}${incident.closed_at === null ? html` <span class="muted">ongoing</span>` : null}</td>
              <td><span class=${`tag status-${incident.status}${incident.status === 'attention' ? ' attention' : ''}`}>${labelOf(STATUS_LABELS, incident.status)}</span></td>
              <td>${incidentWhere(incident, keyName)}</td>
              <td>${incidentCause(incident)}</td>
            </tr>`)}</tbody>
          </table>`}
          ${data && steps && data.total > INCIDENTS_PAGE ? html`<div class="pager"><span class="muted">${pageRange(data.offset, issues.length, data.total)}</span>
            <button class="secondary" disabled=${steps.previous === null} onClick=${() => set({ inc_offset: steps.previous })}>Previous page</button>
            <button class="secondary" disabled=${steps.next === null} onClick=${() => set({ inc_offset: steps.next })}>Next page</button></div>` : null}
        </${Card}>
      </div>
    </div>
    ${route.id ? html`<${IncidentDetail} id=${route.id} context=${context}
      onClose=${() => navigate('incidents', {}, null)}
      onPrevious=${neighbour(issues, index - 1, open)}
      onNext=${index >= 0 ? neighbour(issues, index + 1, open) : null} />` : null}
  </div>`
}

/** Opens the item at `index` of the list, or null (a disabled button) when there is none. */
function neighbour(/** @type {{ id: string }[]} */ items, /** @type {number} */ index, /** @type {(id: string) => void} */ open) {
  const item = index >= 0 ? items[index] : undefined
  return item ? () => open(item.id) : null
}
