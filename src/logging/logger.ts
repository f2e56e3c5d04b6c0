// pino everywhere: one JSON line per event, keys, tokens and passwords redacted; pretty when a person is
// watching a terminal. Logs go to stderr, so a CLI's stdout carries only its JSON output.
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACTED_PATHS = [
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'OPENAI_API_KEY',
  '*.OPENAI_API_KEY',
  'API_TOKEN',
  '*.API_TOKEN',
  'BOARD_PASSWORD',
  '*.BOARD_PASSWORD',
];

export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  const options = { name, level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (process.stderr.isTTY && process.env.NODE_ENV !== 'production') {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 2 } },
    });
  }
  return pino(options, pino.destination(2));
}
