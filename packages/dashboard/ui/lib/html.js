// htm bound to Preact's h: tagged templates instead of JSX, so the browser runs the files as they are.
import { h } from 'preact'
import htm from 'htm'

export const html = htm.bind(h)
