// Whether a process of the fleet exports OpenTelemetry traces, and what it gets when it does. With neither
// OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, startTelemetry returns undefined
// without loading any OpenTelemetry SDK or exporter module (they are imported dynamically): nothing is sent,
// nothing is paid for. See docs/telemetry.md.
import { ConfigError } from '../kernel/errors.js';
import type { FleetTelemetry, TelemetryOptions, TelemetrySettings } from './telemetry-types.js';

export type {
  FleetTelemetry,
  RunTrace,
  RunTraceStart,
  TelemetryOptions,
  TelemetrySettings,
} from './telemetry-types.js';

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
