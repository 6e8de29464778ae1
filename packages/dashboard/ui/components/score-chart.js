// A route's routing score out of 100, per node, over the window (GET .../history/scores), drawn
// with uPlot; hovering a moment lists each node's score and its parts. uPlot is imported when a
// chart opens, not with the page: the dashboard does not wait for it, and a browser whose
// locale uPlot cannot read (it formats numbers at import) keeps every other page.
import { useEffect, useRef, useState } from 'preact/hooks'
import { html } from '../lib/html.js'
import { useApi, withQuery } from '../lib/api.js'
import { STATE_LABELS, stamp } from '../lib/format.js'
import { Sheet } from './sheet.js'
import { ErrorNotice } from './notice.js'

const SCORES = '/api/adaptive-routing/history/scores'
const COLOURS = ['#3a4fd1', '#d64545', '#1f9d55', '#d99a06', '#7b3fc4', '#2a9bb5']

/** Aligns every node's points on whole minutes, so uPlot gets one x axis and a series per node. */
function aligned(series) {
  const minute = (at) => Math.floor(Date.parse(at) / 60_000) * 60
  const xs = [...new Set(series.flatMap((node) => node.points.map((point) => minute(point.at))))].sort((a, b) => a - b)
  const index = new Map(xs.map((x, at) => [x, at]))
  const byNode = series.map((node) => {
    const values = new Array(xs.length).fill(null)
    const points = new Array(xs.length).fill(null)
    for (const point of node.points) {
      const at = index.get(minute(point.at))
      values[at] = point.score
      points[at] = point
    }
    return { values, points }
  })
  return { xs, byNode }
}

export function ScoreChart({ entity, label, window, onClose }) {
  const scores = useApi(withQuery(SCORES, { entity, from: window.from, to: window.to }), [entity])
  const target = useRef(null)
  const [hover, setHover] = useState(null)
  const [failure, setFailure] = useState(null)
  useEffect(() => {
    if (!scores.data || !target.current || scores.data.series.length === 0) return undefined
    let plot = null
    let cancelled = false
    import('uplot').then(({ default: uPlot }) => {
      if (cancelled) return
      const { xs, byNode } = aligned(scores.data.series)
      plot = new uPlot(
        {
          width: Math.min(660, target.current.clientWidth || 660),
          height: 260,
          scales: { y: { range: [0, 100] } },
          series: [{}, ...scores.data.series.map((node, at) => ({ label: node.node_id, stroke: COLOURS[at % COLOURS.length], width: 2, spanGaps: false }))],
          axes: [{}, { label: 'score' }],
          hooks: { setCursor: [(chart) => setHover(chart.cursor.idx ?? null)] },
        },
        [xs, ...byNode.map((node) => node.values)],
        target.current,
      )
      target.current.points = byNode
    }, (error) => setFailure(error))
    return () => {
      cancelled = true
      plot?.destroy()
    }
  }, [scores.data])
  const points = hover === null || !target.current?.points ? [] : target.current.points.map((node, at) => ({ node: scores.data.series[at], point: node.points[hover] }))
  return html`<${Sheet} title=${`Routing score: ${label}`} testid="score-chart" onClose=${onClose}>
    <${ErrorNotice} error=${scores.error} what="Scores" />
    <${ErrorNotice} error=${failure} what="The chart could not be drawn" />
    ${scores.data?.series.length === 0 ? html`<p class="empty">No snapshot of this route in the window.</p>` : null}
    <div class="chart card" ref=${target}></div>
    <div class="card" data-testid="score-breakdown">
      ${points.length === 0 ? html`<p class="muted">Hover the chart for each node's score and its parts.</p>` : html`<table class="table">
        <thead><tr><th>Node</th><th>At</th><th>State</th><th class="num">Score</th><th class="num">Weight</th><th class="num">Error penalty</th><th class="num">Latency penalty</th><th class="num">Utilisation</th><th class="num">Recovery</th><th class="num">Requests</th><th class="num">Errors</th></tr></thead>
        <tbody>${points.map(({ node, point }) => html`<tr key=${node.node_id}>
          <td>${node.node_id}</td>${point ? html`<td>${stamp(point.at)}</td><td>${STATE_LABELS[point.state]}${point.held ? ' (held)' : ''}</td><td class="num">${point.score}</td><td class="num">${point.weight}</td>
          <td class="num">${point.error_penalty}</td><td class="num">${point.latency_penalty}</td><td class="num">${point.utilisation}</td><td class="num">${point.recovery}</td><td class="num">${point.requests}</td><td class="num">${point.errors}</td>` : html`<td colspan="10" class="muted">no snapshot at this minute</td>`}
        </tr>`)}</tbody></table>`}
    </div>
  </${Sheet}>`
}
