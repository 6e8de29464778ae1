import { html } from '../lib/html.js'

/**
 * An API failure, in the API's own words.
 * @param {{ error: Error | null | undefined, what?: string }} props
 */
export function ErrorNotice({ error, what }) {
  if (!error) return null
  return html`<div class="notice error" role="alert">${what ? `${what}: ` : ''}${error.message}</div>`
}

/**
 * What the page would show, and why it cannot yet: an API this node does not serve.
 * @param {{ path: string, what: string }} props
 */
export function MissingApi({ path, what }) {
  return html`<div class="notice missing">
    ${what} is not available on this node: <code>${path}</code> is not served by this version of the gateway.
  </div>`
}

/**
 * A card with a title line and optional actions on the right. `busy` while what it shows
 * answers an earlier question than the one asked (`query`, the question it answers, is kept
 * on the card as data-query).
 * @param {{ title: string, actions?: unknown, children?: unknown, className?: string, testid?: string, busy?: boolean, query?: string | undefined }} props
 */
export function Card({ title, actions = null, children, className = '', testid, busy, query }) {
  return html`<section class=${`card ${className}${busy ? ' stale' : ''}`} data-testid=${testid} aria-busy=${busy === undefined ? undefined : String(busy)} data-query=${query}>
    <header class="card-head"><h2>${title}</h2><div class="card-actions">${actions}</div></header>
    ${children}
  </section>`
}
