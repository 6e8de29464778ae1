/**
 * @switchboard/dashboard — the web UI every node serves at `/`.
 *
 * Static assets (no build step: ES modules served as they are, Preact + htm
 * for views, uPlot for time series), read from this package by the gateway.
 */
export {}
