// Whether a process of the fleet exports OpenTelemetry traces, and what it gets when it does. With neither
// OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, startTelemetry returns undefined
// without loading any OpenTelemetry SDK or exporter module (they are imported dynamically): nothing is sent,
// nothing is paid for. See docs/telemetry.md.
import type { Telemetry } from 'bullmq';
import { ConfigError } from '../kernel/errors.js';
import type { RunObserver } from '../kernel/run-observer.js';
import type { AgentResult } from '../kernel/types.js';

export interface RunTraceStart {
  jobId: string;
  /** The agent's name (`default` for a task without one). */
  agent: string;
  model: string;
  /** The job's attempt, from 1. */
  attempt: number;
  batchId?: string;
  /** The task's text: in the span only when content capture is on. */
  task: string;
}

/** One run's `invoke_agent` span; its model and tool calls become its children. */
export interface RunTrace extends RunObserver {
  end(result: AgentResult): void;
  /** The run threw (a bug): the span records it and ends. */
  fail(error: unknown): void;
}

export interface FleetTelemetry {
  /** For BullMQ's queues and workers (`telemetry` option): carries the producer's trace into the job. */
  bullmq: Telemetry;
  startRun(start: RunTraceStart): RunTrace;
  /** Sends the spans still buffered, then stops exporting. Safe to call twice. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /** `service.name` unless OTEL_SERVICE_NAME says otherwise, e.g. `agent-fleet-worker`. */
  serviceName: string;
  /** The model endpoint (OPENAI_BASE_URL): its host and port go on `chat` spans. Default OpenAI's. */
  modelBaseUrl?: string;
  /** Where the exporter's own failures are reported (one line each, scrubbed). */
  logger?: { warn(fields: Record<string, unknown>, message: string): void };
}

export interface TelemetrySettings {
  /** Prompt, completion, tool arguments and results in spans (scrubbed): OTEL_GENAI_CAPTURE_CONTENT=true. */
  captureContent: boolean;
}

const ENDPOINT_VARIABLES = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const;

/**
 * The settings when traces are to be exported, null when not: no endpoint set, OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none. A bad value throws a ConfigError naming the variable.
 */
export function telemetrySettings(env: NodeJS.ProcessEnv = process.env): TelemetrySettings | null {
  const set = ENDPOINT_VARIABLES.filter((name) => (env[name] ?? '').trim() !== '');
  if (set.length === 0) return null;
  if (flag(env, 'OTEL_SDK_DISABLED')) return null;
  const exporter = (env['OTEL_TRACES_EXPORTER'] ?? '').trim().toLowerCase();
  if (exporter === 'none') return null;
  if (exporter !== '' && exporter !== 'otlp') {
    throw new ConfigError(
      'invalid_config',
      `OTEL_TRACES_EXPORTER: only "otlp" (OTLP over HTTP) or "none" is supported, got "${exporter}"`,
    );
  }
  for (const name of set) {
    const value = env[name]!.trim();
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new ConfigError(
        'invalid_config',
        `${name}: must be an http(s) URL such as http://127.0.0.1:4318`,
      );
    }
  }
  // JSON over HTTP is what is sent; any OTLP/HTTP receiver (port 4318) takes it. gRPC (4317) would not.
  const protocol = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? '';
  if (protocol.trim().toLowerCase() === 'grpc') {
    throw new ConfigError(
      'invalid_config',
      'OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported; the fleet sends OTLP over HTTP (http/json), port 4318',
    );
  }
  return { captureContent: flag(env, 'OTEL_GENAI_CAPTURE_CONTENT') };
}

/** Starts exporting when the environment asks for it; undefined (and nothing loaded) when it does not. */
export async function startTelemetry(options: TelemetryOptions): Promise<FleetTelemetry | undefined> {
  // process.env, not a copy: the exporter reads the same variables (endpoint, headers) from it.
  const settings = telemetrySettings(process.env);
  if (!settings) return undefined;
  const { startOtelExport } = await import('./otel-export.js');
  return startOtelExport(options, settings);
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const value = (env[name] ?? '').trim().toLowerCase();
  if (value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new ConfigError('invalid_config', `${name}: must be true or false, got "${env[name]}"`);
}
