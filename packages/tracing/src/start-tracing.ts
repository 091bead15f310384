/**
 * The OpenTelemetry SDK of one process, started from the standard `OTEL_*` variables: off unless
 * an exporter is named (`OTEL_TRACES_EXPORTER`) or an OTLP endpoint is set, and off whatever else
 * is set when `OTEL_SDK_DISABLED=true`. Off, the SDK is never loaded: the API's no-op tracer is
 * all that runs. The sampler (`OTEL_TRACES_SAMPLER`, `_ARG`) and the service's resource
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) are read by the SDK itself, the endpoint,
 * headers and time-out by the exporter.
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';

export interface Tracing {
  /** Whether spans are exported (an exporter configured). */
  readonly enabled: boolean;
  /** Exports what is still buffered and stops; at a process's shutdown. */
  shutdown(): Promise<void>;
}

type Env = Record<string, string | undefined>;

const OFF: Tracing = { enabled: false, shutdown: async () => {} };

/** The exporters named by `OTEL_TRACES_EXPORTER` (comma-separated), or `otlp` when only an endpoint is set; none when off. */
export function tracesExporters(env: Env): string[] {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return [];
  const named = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase()).filter(Boolean) ?? [];
  if (named.length > 0) return named.includes('none') ? [] : named;
  return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT ? ['otlp'] : [];
}

/** OTLP's protocol for traces: the spec's default, `http/protobuf`, unless one is set. */
export function otlpProtocol(env: Env): 'grpc' | 'http/protobuf' | 'http/json' {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim().toLowerCase();
  if (protocol === 'grpc' || protocol === 'http/json' || protocol === 'http/protobuf') return protocol;
  throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is none of grpc, http/protobuf, http/json`);
}

async function exporterNamed(name: string, env: Env): Promise<SpanExporter> {
  if (name === 'console') return new (await import('@opentelemetry/sdk-trace-base')).ConsoleSpanExporter();
  if (name !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: "${name}" is none of otlp, console, none`);
  switch (otlpProtocol(env)) {
    case 'grpc': return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
    case 'http/json': return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
    case 'http/protobuf': return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  }
}

/**
 * Starts tracing for `serviceName` (which `OTEL_SERVICE_NAME` overrides), first thing in a
 * service's main: the global tracer provider, W3C trace context propagation, and an
 * asynchronous-context manager so a span started inside another is its child. Reads the
 * process's environment, as the SDK and its exporters do.
 */
export async function startTracing(serviceName: string): Promise<Tracing> {
  const env = process.env;
  const names = tracesExporters(env);
  if (names.length === 0) return OFF;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { resourceFromAttributes, envDetector, detectResources }, { ATTR_SERVICE_NAME }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporters = await Promise.all(names.map((name) => exporterNamed(name, env)));
  // The environment's resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins over the default name.
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: exporters.map((exporter) => new BatchSpanProcessor(exporter)) });
  provider.register();
  return {
    enabled: true,
    shutdown: () => provider.shutdown(),
  };
}
