// The sidebar filters' state in the URL: a filter is a comma-separated route param
// (`providers=openai,azure`), and a facet is the API's count per value of the window.

/** The chosen values of a comma-separated route param (none when it is missing or empty; empty items dropped). */
export const chosen = (/** @type {Record<string, string | undefined>} */ params, /** @type {string} */ name) => (params[name] ? params[name].split(',').filter((value) => value !== '') : [])

/** The param with `value` added or taken out; null (the param goes) when nothing is left. */
export function toggled(/** @type {Record<string, string | undefined>} */ params, /** @type {string} */ name, /** @type {string} */ value) {
  const values = chosen(params, name)
  const next = values.includes(value) ? values.filter((item) => item !== value) : [...values, value]
  return next.length === 0 ? null : next.join(',')
}

/** A facet's values with their counts, most first (ties keep the API's order). */
export function facetEntries(/** @type {Record<string, number> | null | undefined} */ counts) {
  return Object.entries(counts ?? {}).sort((left, right) => right[1] - left[1])
}

/** Every param named in `names` set to null: the changes that clear those filters. */
export const cleared = (/** @type {string[]} */ names) => Object.fromEntries(names.map((name) => [name, null]))
