// The OpenTelemetry SDK of a fleet process, loaded only when an OTLP endpoint is configured
// (fleet-telemetry.ts imports this module dynamically). Spans go in batches to OTLP over HTTP as JSON; the
// exporter reads the standard variables itself (OTEL_EXPORTER_OTLP_ENDPOINT, …_TRACES_ENDPOINT, …_HEADERS,
// …_TIMEOUT), the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, the batching OTEL_BSP_*.
// The W3C trace context is what BullMQ stores in a job, so a producer's trace continues in the worker.
import { context, diag, DiagLogLevel, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BullMQOtel } from 'bullmq-otel';
import { scrubText } from '../logging/redact.js';
import { settlesWithin } from '../util/with-timeout.js';
import { AsyncLocalContextManager } from './async-context.js';
import type { FleetTelemetry, TelemetryOptions, TelemetrySettings } from './fleet-telemetry.js';
import { GenAiTracing, serverOf } from './genai-tracing.js';

const TRACER_NAME = 'agent-fleet';
/** How long a stopping process waits for its last spans to be sent. */
const SHUTDOWN_MS = 5_000;

export function startOtelExport(options: TelemetryOptions, settings: TelemetrySettings): FleetTelemetry {
  const logger = options.logger;
  if (logger) {
    // The SDK's own complaints (an unreachable collector, a refused export): one scrubbed line each.
    const report = (message: string, ...args: unknown[]) =>
      logger.warn(
        { otel: args.map((arg) => scrubText(arg instanceof Error ? arg.message : String(arg))) },
        `telemetry: ${scrubText(message)}`,
      );
    const quiet = () => undefined;
    diag.setLogger(
      { error: report, warn: report, info: quiet, debug: quiet, verbose: quiet },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': options.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  context.setGlobalContextManager(new AsyncLocalContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);

  const tracing = new GenAiTracing(trace.getTracer(TRACER_NAME), {
    captureContent: settings.captureContent,
    server: serverOf(options.modelBaseUrl),
  });
  let stopping: Promise<void> | undefined;
  return {
    bullmq: new BullMQOtel({ tracerName: 'bullmq' }),
    startRun: (start) => tracing.startRun(start),
    shutdown: () =>
      (stopping ??= (async () => {
        if (!(await settlesWithin(provider.shutdown(), SHUTDOWN_MS).catch(() => false))) {
          logger?.warn({}, 'telemetry: spans not all sent before stopping');
        }
      })()),
  };
}
