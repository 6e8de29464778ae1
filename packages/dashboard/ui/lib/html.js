// htm bound to Preact's h: tagged templates instead of JSX, so the browser runs the files as they are.
import { h } from 'preact'
import htm from 'htm'

export const html = htm.bind(h)

/** The value of the input an event came from (an input, select or textarea). */
export const inputValue = (/** @type {Event} */ event) => /** @type {HTMLInputElement} */ (event.currentTarget).value

/** Whether the checkbox an event came from is checked. */
export const inputChecked = (/** @type {Event} */ event) => /** @type {HTMLInputElement} */ (event.currentTarget).checked
