// pino everywhere: one JSON line per event, secrets redacted (see redact.ts); pretty when a person is
// watching a terminal. Logs go to stderr, so a CLI's stdout carries only its JSON output.
import { format } from 'node:util';
import { pino, type DestinationStream, type LogFn, type Logger, type LoggerOptions } from 'pino';
import { redactValue, scrubText, type RedactLimits } from './redact.js';

export type { Logger };

/** Log lines are small; a bigger object is a mistake, and cutting it keeps the line cheap. */
const LOG_LIMITS: RedactLimits = { maxDepth: 16, maxNodes: 2_000 };

const redact = (value: unknown): unknown => redactValue(value, LOG_LIMITS);

/**
 * Every argument of every log call, before pino sees it: the merging object (at any depth), the message and
 * its interpolation values. Pino's `redact` option only knows fixed paths; this knows patterns.
 */
function redactLogArguments(args: unknown[]): unknown[] {
  const [first, ...rest] = args;
  if (first === null || typeof first !== 'object') return redactMessage(args);
  // pino files an Error given alone under `err` and takes its message: the same, redacted.
  return [redact(first instanceof Error ? { err: first } : first), ...redactMessage(rest)];
}

function redactMessage(parts: unknown[]): unknown[] {
  if (parts.length === 0) return parts;
  const [message, ...params] = parts;
  if (typeof message !== 'string') return parts.map(redact);
  // Interpolated here, so a secret split between the template and its values is seen whole.
  return [scrubText(params.length === 0 ? message : format(message, ...params.map(redact)))];
}

/**
 * For `err` and `error`: by then already redacted copies, which pino's default serializer would rebuild (and
 * call `Object`). An Error that still gets here is redacted.
 */
const passRedacted = (value: unknown): unknown => (value instanceof Error ? redact(value) : value);

function loggerOptions(name: string, level: string): LoggerOptions {
  return {
    name,
    level,
    hooks: {
      logMethod(args, method) {
        // Parameters<LogFn> is an overload union; the redacted arguments have the same shape.
        method.apply(this, redactLogArguments(args) as Parameters<LogFn>);
      },
    },
    // The root's bindings only: pino resets this formatter for children (see redactChildBindings).
    formatters: { bindings: (bindings) => redact(bindings) as Record<string, unknown> },
    serializers: { err: passRedacted, error: passRedacted },
  };
}

/** A logger named `name`; `destination` is for tests, which read what a process would print. */
export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const options = loggerOptions(name, level);
  if (destination) return redactChildBindings(pino(options, destination));
  if (process.stderr.isTTY && process.env.NODE_ENV !== 'production') {
    return redactChildBindings(
      pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } } }),
    );
  }
  return redactChildBindings(pino(options, pino.destination(2)));
}

/**
 * Pino gives a child's bindings (`logger.child({ jobId })`) no formatter, so they are redacted on the way in.
 * Children are created from their parent's prototype chain, so grandchildren go through here too.
 */
function redactChildBindings(logger: Logger): Logger {
  const { child, setBindings } = logger;
  Object.assign(logger, {
    child(this: Logger, bindings: Record<string, unknown>, options?: Parameters<Logger['child']>[1]) {
      return child.call(this, redact(bindings) as Record<string, unknown>, options);
    },
    setBindings(this: Logger, bindings: Record<string, unknown>) {
      setBindings.call(this, redact(bindings) as Record<string, unknown>);
    },
  });
  return logger;
}
