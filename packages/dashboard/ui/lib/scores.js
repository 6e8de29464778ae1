// The score chart's data (GET .../history/scores) shaped for uPlot: one x axis of whole minutes
// and one series per node, with a gap where a node has no snapshot.

/** @typedef {import('./answers').ScoreSeries} ScoreSeries */
/** @typedef {import('./answers').ScorePoint} ScorePoint */

/** The colours of the nodes' lines, in the order of the series (they repeat past six nodes). */
export const SERIES_COLOURS = ['#3a4fd1', '#d64545', '#1f9d55', '#d99a06', '#7b3fc4', '#2a9bb5']

/** The colour of the `index`th node's line. */
export const seriesColour = (/** @type {number} */ index) => /** @type {string} */ (SERIES_COLOURS[index % SERIES_COLOURS.length])

/** An instant as the unix second its minute starts at; null when it is not a time. */
export function minuteOf(/** @type {string} */ at) {
  const ms = Date.parse(at)
  return Number.isNaN(ms) ? null : Math.floor(ms / 60_000) * 60
}

/**
 * Aligns every node's points on whole minutes, so uPlot gets one x axis and a series per node:
 * `xs` ascending, and per node its scores (`values`, null in a gap) and the points behind them.
 * A point whose time is not a time is left out; a later point in the same minute wins.
 */
export function alignScores(/** @type {ScoreSeries[]} */ series) {
  const xs = [...new Set(series.flatMap((node) => node.points.map((point) => minuteOf(point.at)).filter((x) => x !== null)))].sort((a, b) => a - b)
  const index = new Map(xs.map((x, at) => [x, at]))
  const byNode = series.map((node) => {
    /** @type {(number | null)[]} */
    const values = new Array(xs.length).fill(null)
    /** @type {(ScorePoint | null)[]} */
    const points = new Array(xs.length).fill(null)
    for (const point of node.points) {
      const minute = minuteOf(point.at)
      const at = minute === null ? undefined : index.get(minute)
      if (at === undefined) continue
      values[at] = point.score
      points[at] = point
    }
    return { values, points }
  })
  return { xs, byNode }
}
