// The timeline (reference: "The Dashboard"): a row per provider + model, expanding to its keys;
// each dot a stretch of time coloured by the worst state any node saw in it (not the state at
// one instant), filled part way when only some nodes saw it, hatched when the key was held, with
// the failed attempts counted in its title; a key held now (or in the window) has a Held badge
// on its row; above them the incidents lane. Clicking a dot asks the issues API what happened
// on that row in that stretch.
import { useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { navigate } from '../lib/route.js'
import { duration, stamp, stateLabel, reasonLabel } from '../lib/format.js'
import { ISSUES_PATH } from '../lib/incidents.js'
import { holdsOn } from '../lib/holds.js'
import { cellsOf, dotTitle, failuresText, fillPercent, laneBar, timelineGrid } from '../lib/timeline.js'
import { Card } from './notice.js'
import { ScoreChart } from './score-chart.js'

/** @typedef {import('../lib/answers').TimelineBucket} TimelineBucket */
/** @typedef {import('../lib/answers').TimelineAnswer} TimelineAnswer */
/** @typedef {{ label: string, entities: string[], bucket: TimelineBucket }} StretchChoice */

/**
 * The Held badge of a key row: held now (by the conditions API), else held in a stretch of the window (its buckets); none otherwise.
 * @param {{ holds: import('../lib/answers').HoldEntry[], buckets: TimelineBucket[] }} props
 */
function HeldBadge({ holds, buckets }) {
  const hold = holds[0]
  if (hold) {
    return html`<span class="badge state-failed held tl-held" data-testid="timeline-held" data-held="now"
      title=${`Held now: ${reasonLabel(hold.reason)}. ${hold.provider} said: “${hold.message}”`}>Held</span>`
  }
  if (buckets.some((bucket) => bucket.held)) {
    return html`<span class="badge state-failed held tl-held earlier" data-testid="timeline-held" data-held="window"
      title="Held during this window, released since">Held earlier</span>`
  }
  return null
}

/**
 * The timeline of the window: a row per provider + model, its keys, and the incidents lane.
 * @param {{ timeline: TimelineAnswer, context: import('../lib/page').PageContext, conditions: import('../lib/answers').ConditionsAnswer | undefined }} props
 */
export function Timeline({ timeline, context, conditions }) {
  // Entities named in the URL (a request's "View in routing history") are marked, and their rows open.
  const highlighted = new Set((context.route.params.entities ?? '').split(',').filter(Boolean))
  const [expanded, setExpanded] = useState(() => new Set(timeline.rows.filter((row) => highlighted.has(row.entity) || row.keys.some((key) => highlighted.has(key.entity))).map((row) => row.entity)))
  const [stretch, setStretch] = useState(/** @type {StretchChoice | null} */ (null))
  const [chart, setChart] = useState(/** @type {{ entity: string, label: string } | null} */ (null))
  const grid = timelineGrid(timeline)
  const { from, to, bucketMs, slots } = grid
  const toggle = (/** @type {string} */ entity) => {
    const next = new Set(expanded)
    if (next.has(entity)) next.delete(entity)
    else next.add(entity)
    setExpanded(next)
  }
  const dots = (/** @type {{ buckets: TimelineBucket[] }} */ row, /** @type {string} */ label, /** @type {string[]} */ entities) => {
    const cells = cellsOf(row.buckets, grid)
    return html`<div class="tl-dots" style=${`grid-template-columns: repeat(${slots}, 1fr)`}>
      ${cells.map((bucket, index) => bucket === null
        ? html`<span key=${index}></span>`
        : html`<button key=${index} class=${`tl-dot s-${bucket.state}${bucket.held ? ' held' : ''}`} data-state=${bucket.state} data-held=${bucket.held}
            data-at=${bucket.at} data-failed=${bucket.failed ?? 0} data-requests=${bucket.requests ?? 0}
            title=${dotTitle(bucket)}
            onClick=${() => setStretch({ label, entities, bucket })}>
            <span class="fill" style=${`height: ${fillPercent(bucket.share)}%`}></span>
          </button>`)}
    </div>`
  }
  const lane = html`<div class="tl-row lane"><div class="tl-label muted">Incidents</div>
    <div class="tl-lane" data-testid="incidents-lane">
      ${timeline.incidents.map((incident) => {
        const { left, width } = laneBar(incident, from, to)
        return html`<button key=${incident.id} class=${`tl-bar ${incident.status}`} style=${`left: ${left}%; width: ${width}%`} data-testid="incident-bar"
          title=${`${incident.entity}: ${incident.status}, opened ${stamp(incident.opened_at)}`} onClick=${() => navigate('incidents', {}, incident.id)}></button>`
      })}
    </div><span></span></div>`
  return html`<${Card} title="Timeline" testid="timeline">
    ${timeline.rows.length === 0 ? html`<p class="empty">Nothing was routed in this window.</p>` : html`<div class="timeline">
      ${lane}
      ${timeline.rows.map((row) => html`
        <div class=${`tl-row${highlighted.has(row.entity) ? ' highlight' : ''}`} key=${row.entity} data-testid="timeline-row" data-entity=${row.entity}>
          <div class="tl-label"><button class="link" aria-expanded=${expanded.has(row.entity)} onClick=${() => toggle(row.entity)}>${expanded.has(row.entity) ? '▾' : '▸'} ${row.provider} · ${row.model}</button></div>
          ${dots(row, `${row.provider} · ${row.model}`, [row.entity, ...row.keys.map((key) => key.entity)])}
          <span></span>
        </div>
        ${expanded.has(row.entity) ? row.keys.map((key) => html`<div class=${`tl-row key${highlighted.has(key.entity) ? ' highlight' : ''}`} key=${key.entity} data-testid="timeline-key" data-entity=${key.entity} data-key=${key.key_name}>
          <div class="tl-label">${key.key_name} <${HeldBadge} holds=${holdsOn(conditions?.conditions, row.provider, row.model, key.key_id)} buckets=${key.buckets} /></div>
          ${dots(key, `${row.provider} · ${row.model} · ${key.key_name}`, [key.entity, `key:${row.provider}:${key.key_id}`])}
          <button class="secondary" title="Routing score per node" aria-label=${`Score of ${key.key_name}`} onClick=${() => setChart({ entity: key.entity, label: `${row.provider} · ${row.model} · ${key.key_name}` })}>📈</button>
        </div>`) : null}`)}
      <div class="tl-row"><span></span><div class="tl-axis"><span>${stamp(timeline.from)}</span><span>${stamp(timeline.to)}</span></div><span></span></div>
    </div>`}
    ${stretch ? html`<${Stretch} stretch=${stretch} bucketMs=${bucketMs} onClose=${() => setStretch(null)} />` : null}
    ${chart ? html`<${ScoreChart} entity=${chart.entity} label=${chart.label} window=${context.window} onClose=${() => setChart(null)} />` : null}
  </${Card}>`
}

/**
 * What happened on one row in one stretch: the bucket as the timeline has it, and the incidents the issues API finds there.
 * @param {{ stretch: StretchChoice, bucketMs: number, onClose: () => void }} props
 */
function Stretch({ stretch, bucketMs, onClose }) {
  const start = Date.parse(stretch.bucket.at)
  /** @type {import('../lib/api.js').ApiState<import('../lib/answers').IssuesAnswer>} */
  const issues = useApi(withQuery(ISSUES_PATH, { from: Math.floor(start / 1000), to: Math.ceil((start + bucketMs) / 1000), entities: stretch.entities }), [stretch])
  const { bucket } = stretch
  return html`<div class="card stretch" data-testid="stretch">
    <header class="card-head"><h2>${stretch.label}, ${stamp(start)} – ${stamp(start + bucketMs)}</h2><div class="card-actions"><button class="secondary" onClick=${onClose}>Close</button></div></header>
    <p>Worst state: <span class=${`badge state-${bucket.state}${bucket.held ? ' held' : ''}`}>${stateLabel(bucket.state)}</span>
      ${bucket.share < 1 ? ` on ${Math.round(bucket.share * bucket.nodes)} of the ${bucket.nodes} nodes reporting` : ` on every node reporting (${bucket.nodes})`}${bucket.held ? '; the key was held' : ''}.
      <span data-testid="stretch-failures">${failuresText(bucket).replace(/^./, (first) => first.toUpperCase())}.</span></p>
    ${issues.data?.issues?.length ? html`<ul class="events">${issues.data.issues.map((incident) => html`<li key=${incident.id}>
        <span>${incident.status}</span>
        <span><button class="link" onClick=${() => navigate('incidents', {}, incident.id)}>${incident.reasons.map(reasonLabel).join(', ') || incident.worst_state} on ${incident.provider} ${incident.models.join(', ')}</button>
          — opened ${stamp(incident.opened_at)}, ${incident.closed_at ? `lasted ${duration(incident.duration_seconds)}` : 'still open'}</span>
      </li>`)}</ul>`
      : html`<p class="muted">${issues.loading ? 'Looking…' : 'No incident on this row in this stretch.'}</p>`}
  </div>`
}
