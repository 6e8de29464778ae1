// Sidebar filters: each value with how many items of the window it matches (the API's facets).
import { html } from '../lib/html.js'
import { facetEntries } from '../lib/filters.js'

/** @typedef {[param: string, title: string, counts: Record<string, number> | undefined, label?: (value: string) => string]} FacetGroup */

/**
 * `groups`: [[param, title, facetCounts, label?]]; `selected(param)` gives the chosen values.
 * An empty value (a request refused before it named a model) is counted as "none", and is
 * not a filter: a comma-separated param cannot carry it.
 * @param {{ groups: FacetGroup[], selected: (param: string) => string[], onToggle: (param: string, value: string) => void }} props
 */
export function Facets({ groups, selected, onToggle }) {
  return html`<aside class="facets" data-testid="facets">
    ${groups.map(([param, title, counts, label = (value) => value]) => {
      const entries = facetEntries(counts)
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
