// Request log: every request the fleet served, filtered as GET /api/logs filters (the adaptive
// routing ones included), and one request's routing summary in words.
import { html, inputChecked, inputValue } from '../lib/html.js'
import { useApi } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { httpStatusState, plural, reasonLabel, stamp } from '../lib/format.js'
import { chosen, toggled } from '../lib/filters.js'
import { FLAGS, LOG_SORTS, LOGS_PAGE, LOGS_PATH, logPaths, routingTags } from '../lib/logs.js'
import { pageRange, pageSteps } from '../lib/paging.js'
import { ErrorNotice, MissingApi, Card } from '../components/notice.js'
import { Facets } from '../components/facets.js'
import { LogDetail } from '../components/log-detail.js'

/**
 * The Request log page.
 * @param {{ context: import('../lib/page').PageContext }} props
 */
export function LogsPage({ context }) {
  const { route, window } = context
  const params = route.params
  // The question without the clock: a Live tick moves the window's times, not the filters.
  const paths = logPaths(params, window)
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').LogsAnswer>} */
  const page = useApi(paths.page, [context.tick, context.version], paths.question)
  if (page.error?.status === 404 && !page.data) return html`<${MissingApi} path=${LOGS_PATH} what="The request log" />`
  const set = (/** @type {Record<string, unknown>} */ changes) => navigate('logs', { ...changes, log_offset: changes.log_offset ?? null }, route.id)
  const data = page.data
  const logs = data?.logs ?? []
  const facets = data?.facets ?? {}
  const index = logs.findIndex((entry) => entry.id === route.id)
  const open = (/** @type {string} */ id) => navigate('logs', {}, id)
  const keyName = (/** @type {string} */ id) => data?.key_names?.[id] ?? id
  const steps = data ? pageSteps(data.offset, LOGS_PAGE, data.total) : null
  // Previous / Next of the open request: hidden (undefined) when it is not on this page, disabled (null) at the page's ends.
  const step = (/** @type {number} */ to) => {
    if (index === -1) return undefined
    const item = logs[to]
    return item ? () => open(item.id) : null
  }
  return html`<div class="page logs">
    <${ErrorNotice} error=${page.error} what="Request log" />
    ${data?.request_log_enabled === false ? html`<div class="notice missing">The request log is off on this node (request_log.enabled); older entries are still shown.</div>` : null}
    <div class="layout-side">
      <${Facets} selected=${(/** @type {string} */ name) => chosen(params, `log_${name}`)} onToggle=${(/** @type {string} */ name, /** @type {string} */ value) => set({ [`log_${name}`]: toggled(params, `log_${name}`, value) })}
        groups=${[
          ['providers', 'Provider', facets.providers],
          ['models', 'Model', facets.models],
          ['status', 'Status', facets.status],
          ['failure_classes', 'Failure', facets.failure_classes, (/** @type {string} */ value) => (value === 'none' ? 'none (served)' : reasonLabel(value))],
          ['picked_by', 'Provider picked by', facets.picked_by],
          ['key_ids', 'Key', facets.key_ids, keyName],
          ['nodes', 'Node', facets.nodes],
        ]} />
      <div>
        <div class="toolbar">
          <input type="search" name="log_search" placeholder="Search provider, model, key, message" value=${params.log_search ?? ''}
            onChange=${(/** @type {Event} */ event) => set({ log_search: inputValue(event) })} />
          ${FLAGS.map(([name, label, explain]) => html`<label key=${name} title=${explain}>
            <input type="checkbox" name=${name} checked=${params[name] === 'true'} onChange=${(/** @type {Event} */ event) => set({ [name]: inputChecked(event) ? 'true' : null })} />
            ${label}${facets[name]?.true !== undefined ? html` <span class="muted">(${facets[name]?.true})</span>` : null}
          </label>`)}
          <span class="spacer"></span>
          <label>Sort <select name="log_sort" value=${params.log_sort ?? 'newest'} onChange=${(/** @type {Event} */ event) => set({ log_sort: inputValue(event) })}>
            ${LOG_SORTS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
          </select></label>
        </div>
        <${Card} title=${!data ? 'Requests' : page.current ? plural(data.total, 'request') : 'Requests (updating for the new filters…)'} testid="logs" busy=${!page.current} query=${page.query ?? undefined}>
          ${logs.length === 0 ? html`<p class="empty">No request in this window matches.</p>` : html`<table class="table">
            <thead><tr><th>Time</th><th>Node</th><th>Asked for</th><th>Served by</th><th>Status</th><th class="num">Latency</th><th class="num">Tokens</th><th>Routing</th></tr></thead>
            <tbody>${logs.map((entry) => html`<tr key=${entry.id} class=${`clickable${entry.id === route.id ? ' selected' : ''}`} data-testid="log-row" data-id=${entry.id} onClick=${() => open(entry.id)}>
              <td title=${entry.id}>${stamp(entry.at)}</td>
              <td>${entry.node_id}</td>
              <td>${entry.requested.provider ? `${entry.requested.provider}/` : ''}${entry.requested.model}</td>
              <td>${entry.served.provider ? html`${entry.served.provider}/${entry.served.model} <span class="muted">· ${entry.served.key_name}</span>` : '—'}</td>
              <td><span class=${`badge state-${httpStatusState(entry.status)}`}>${entry.status}</span></td>
              <td class="num">${entry.latency_ms} ms</td>
              <td class="num">${entry.usage?.total_tokens ?? '—'}</td>
              <td><${RoutingTags} routing=${entry.routing} /></td>
            </tr>`)}</tbody>
          </table>`}
          ${data && steps && data.total > LOGS_PAGE ? html`<div class="pager">
            <span class="muted">${pageRange(data.offset, logs.length, data.total)}</span>
            <button class="secondary" disabled=${steps.previous === null} onClick=${() => set({ log_offset: steps.previous })}>Newer</button>
            <button class="secondary" disabled=${steps.next === null} onClick=${() => set({ log_offset: steps.next })}>Older</button>
          </div>` : null}
        </${Card}>
      </div>
    </div>
    ${route.id ? html`<${LogDetail} id=${route.id} context=${context}
      onClose=${() => navigate('logs', {}, null)}
      onPrevious=${step(index - 1)}
      onNext=${step(index + 1)} />` : null}
  </div>`
}

/** @param {{ routing: import('../lib/answers').LogEntry['routing'] }} props */
function RoutingTags({ routing }) {
  const { tags, pickedBy } = routingTags(routing)
  return html`${tags.map((tag) => html`<span class=${tag.attention ? 'tag attention' : 'tag'} title=${tag.title}>${tag.text}</span>`)}<span class="muted small"> ${pickedBy}</span>`
}
