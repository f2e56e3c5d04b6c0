// The OpenTelemetry SDK of a fleet process, loaded only when an OTLP endpoint is configured
// (fleet-telemetry.ts imports this module dynamically). Spans go in batches to OTLP over HTTP as JSON; the
// exporter reads the standard variables itself (OTEL_EXPORTER_OTLP_ENDPOINT, …_TRACES_ENDPOINT, …_HEADERS,
// …_TIMEOUT), the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, the batching OTEL_BSP_*.
// The W3C trace context is what BullMQ stores in a job, so a producer's trace continues in the worker.
import { context, diag, DiagLogLevel, propagation, trace, type DiagLogger } from '@opentelemetry/api';
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
import { ChosenSpanIds } from './chosen-span-ids.js';
import type { FleetTelemetry, TelemetryOptions, TelemetrySettings } from './telemetry-types.js';
import { GenAiTracing, serverOf } from './genai-tracing.js';

const TRACER_NAME = 'agent-fleet';
/** The same complaint (a collector down) is logged at most this often. */
const REPEAT_MS = 60_000;
/** How long a stopping process waits for its last spans to be sent. */
const SHUTDOWN_MS = 5_000;

export function startOtelExport(options: TelemetryOptions, settings: TelemetrySettings): FleetTelemetry {
  const logger = options.logger;
  if (logger)
    diag.setLogger(diagToLogger(logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': options.serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const spanIds = new ChosenSpanIds();
  const provider = new BasicTracerProvider({
    resource,
    idGenerator: spanIds,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  context.setGlobalContextManager(new AsyncLocalContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);

  const tracing = new GenAiTracing(trace.getTracer(TRACER_NAME), {
    captureContent: settings.captureContent,
    server: serverOf(options.modelBaseUrl),
    spanIds,
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

/**
 * The SDK's own complaints (an unreachable collector, a refused export) as one scrubbed warning each, the same
 * one at most once a minute: a collector that is down must not flood the logs.
 */
function diagToLogger(logger: NonNullable<TelemetryOptions['logger']>): DiagLogger {
  const last = new Map<string, number>();
  const report = (message: string, ...args: unknown[]) => {
    const text = scrubText(describe(message));
    const now = Date.now();
    if (now - (last.get(text) ?? -Infinity) < REPEAT_MS) return;
    if (last.size > 100) last.clear();
    last.set(text, now);
    logger.warn(
      { otel: args.map((arg) => scrubText(describe(arg))) },
      `telemetry: ${text} (spans may be lost)`,
    );
  };
  const quiet = () => undefined;
  return { error: report, warn: report, info: quiet, debug: quiet, verbose: quiet };
}

/** An error's message; the SDK hands some over as the JSON of the error. */
function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  const text = String(value);
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // Not JSON after all: the text as it is.
    }
  }
  return text;
}
