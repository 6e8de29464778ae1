// A route's routing score out of 100, per node, over the window (GET .../history/scores), drawn
// with uPlot; hovering a moment lists each node's score and its parts. uPlot is imported when a
// chart opens, not with the page: the dashboard does not wait for it, and a browser whose
// locale uPlot cannot read (it formats numbers at import) keeps every other page.
import { useEffect, useRef, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { stamp, stateLabel } from '../lib/format.js'
import { alignScores, seriesColour } from '../lib/scores.js'
import { Sheet } from './sheet.js'
import { ErrorNotice } from './notice.js'

const SCORES = '/api/adaptive-routing/history/scores'

/** @typedef {import('../lib/answers').ScoresAnswer} ScoresAnswer */
/** @typedef {ReturnType<typeof alignScores>['byNode']} AlignedNodes */

/**
 * A route's routing score per node over the window, and its parts under the cursor.
 * @param {{ entity: string, label: string, window: import('../lib/query.js').TimeWindow, onClose: () => void }} props
 */
export function ScoreChart({ entity, label, window, onClose }) {
  /** @type {import('../lib/api.js').ApiState<ScoresAnswer>} */
  const scores = useApi(withQuery(SCORES, { entity, from: window.from, to: window.to }), [entity])
  const target = useRef(/** @type {HTMLDivElement | null} */ (null))
  // The aligned points of the chart drawn, for the breakdown under the cursor.
  const drawn = useRef(/** @type {AlignedNodes | null} */ (null))
  const [hover, setHover] = useState(/** @type {number | null} */ (null))
  const [failure, setFailure] = useState(/** @type {Error | null} */ (null))
  useEffect(() => {
    const data = scores.data
    const element = target.current
    if (!data || !element || data.series.length === 0) return undefined
    /** @type {import('uplot') | null} */
    let plot = null
    let cancelled = false
    import('uplot').then(({ default: uPlot }) => {
      if (cancelled) return
      const { xs, byNode } = alignScores(data.series)
      plot = new uPlot(
        {
          width: Math.min(660, element.clientWidth || 660),
          height: 260,
          scales: { y: { range: [0, 100] } },
          series: [{}, ...data.series.map((node, at) => ({ label: node.node_id, stroke: seriesColour(at), width: 2, spanGaps: false }))],
          axes: [{}, { label: 'score' }],
          hooks: { setCursor: [(chart) => setHover(chart.cursor.idx ?? null)] },
        },
        [xs, ...byNode.map((node) => node.values)],
        element,
      )
      drawn.current = byNode
    }, (/** @type {Error} */ error) => setFailure(error))
    return () => {
      cancelled = true
      plot?.destroy()
    }
  }, [scores.data])
  const series = scores.data?.series ?? []
  const points = hover === null || !drawn.current ? [] : drawn.current.flatMap((node, at) => {
    const owner = series[at]
    return owner ? [{ node: owner, point: node.points[hover] ?? null }] : []
  })
  return html`<${Sheet} title=${`Routing score: ${label}`} testid="score-chart" onClose=${onClose}>
    <${ErrorNotice} error=${scores.error} what="Scores" />
    <${ErrorNotice} error=${failure} what="The chart could not be drawn" />
    ${scores.data?.series.length === 0 ? html`<p class="empty">No snapshot of this route in the window.</p>` : null}
    <div class="chart card" ref=${target}></div>
    <div class="card" data-testid="score-breakdown">
      ${points.length === 0 ? html`<p class="muted">Hover the chart for each node's score and its parts.</p>` : html`<table class="table">
        <thead><tr><th>Node</th><th>At</th><th>State</th><th class="num">Score</th><th class="num">Weight</th><th class="num">Error penalty</th><th class="num">Latency penalty</th><th class="num">Utilisation</th><th class="num">Recovery</th><th class="num">Requests</th><th class="num">Errors</th></tr></thead>
        <tbody>${points.map(({ node, point }) => html`<tr key=${node.node_id}>
          <td>${node.node_id}</td>${point ? html`<td>${stamp(point.at)}</td><td>${stateLabel(point.state)}${point.held ? ' (held)' : ''}</td><td class="num">${point.score}</td><td class="num">${point.weight}</td>
          <td class="num">${point.error_penalty}</td><td class="num">${point.latency_penalty}</td><td class="num">${point.utilisation}</td><td class="num">${point.recovery}</td><td class="num">${point.requests}</td><td class="num">${point.errors}</td>` : html`<td colspan="10" class="muted">no snapshot at this minute</td>`}
        </tr>`)}</tbody></table>`}
    </div>
  </${Sheet}>`
}
