// A side sheet for one item's detail, with Previous / Next through the list it came from.
import { useEffect } from 'preact/hooks'
import { html } from '../lib/html.js'

/**
 * `onPrevious` / `onNext`: undefined hides the button, null shows it disabled (the list's end).
 * @param {{ title: string, onClose: () => void, onPrevious?: (() => void) | null | undefined, onNext?: (() => void) | null | undefined, children?: unknown, testid?: string }} props
 */
export function Sheet({ title, onClose, onPrevious, onNext, children, testid }) {
  useEffect(() => {
    const onKey = (/** @type {KeyboardEvent} */ event) => {
      if (event.key === 'Escape') onClose()
      if (event.key === 'ArrowLeft' && onPrevious) onPrevious()
      if (event.key === 'ArrowRight' && onNext) onNext()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [onClose, onPrevious, onNext])
  return html`<div class="sheet-backdrop" onClick=${onClose}></div>
    <aside class="sheet" role="dialog" aria-label=${title} data-testid=${testid}>
      <div class="sheet-head">
        <h2>${title}</h2>
        <span class="spacer"></span>
        ${onPrevious !== undefined ? html`<button class="secondary" disabled=${!onPrevious} onClick=${onPrevious}>Previous</button>` : null}
        ${onNext !== undefined ? html`<button class="secondary" disabled=${!onNext} onClick=${onNext}>Next</button>` : null}
        <button class="secondary" onClick=${onClose} aria-label="Close">Close</button>
      </div>
      ${children}
    </aside>`
}
