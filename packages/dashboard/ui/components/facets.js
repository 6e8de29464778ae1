// Sidebar filters: each value with how many items of the window it matches (the API's facets).
import { html } from '../lib/html.js'

/**
 * `groups`: [[param, title, facetCounts, label?]]; `selected(param)` gives the chosen values.
 * An empty value (a request refused before it named a model) is counted as "none", and is
 * not a filter: a comma-separated param cannot carry it.
 */
export function Facets({ groups, selected, onToggle }) {
  return html`<aside class="facets" data-testid="facets">
    ${groups.map(([param, title, counts, label = (value) => value]) => {
      const entries = Object.entries(counts ?? {}).sort((left, right) => right[1] - left[1])
      if (entries.length === 0) return null
      const chosen = selected(param)
      return html`<div key=${param}>
        <h3>${title}</h3>
        ${entries.map(([value, n]) => html`<label key=${value} title=${value === '' ? 'Requests refused before they named one (a 400); not a filter' : null}>
          <span><input type="checkbox" name=${`${param}:${value}`} disabled=${value === ''} checked=${chosen.includes(value)} onChange=${() => onToggle(param, value)} /> ${value === '' ? html`<em>none</em>` : label(value)}</span>
          <span class="n">${n}</span>
        </label>`)}
      </div>`
    })}
  </aside>`
}

/** The chosen values of a comma-separated route param. */
export const chosen = (params, name) => (params[name] ? params[name].split(',') : [])

/** The param with `value` added or taken out. */
export function toggled(params, name, value) {
  const values = chosen(params, name)
  const next = values.includes(value) ? values.filter((item) => item !== value) : [...values, value]
  return next.length === 0 ? null : next.join(',')
}
