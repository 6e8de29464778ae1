/**
 * Whether the environment turns tracing on, apart from the tracing itself (setup.ts): a node
 * that does not trace never loads the OpenTelemetry SDK (issue 38, item 3: about 2 MB of heap).
 */

/** True when the environment turns tracing on (an OTLP endpoint is named and the SDK is not disabled). */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporters = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase()
  if (exporters !== undefined && exporters !== '' && !exporters.split(',').some((name) => name.trim() === 'otlp')) return false
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim())
}
