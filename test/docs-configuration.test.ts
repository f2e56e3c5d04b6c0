// docs/configuration.md lists every environment variable the code reads, and nothing the code no longer reads:
// the page is checked against the env schema and a scan of the sources, so it cannot drift. Pure: no services.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../config/env.js';

const ROOT = join(import.meta.dirname, '..');
const SOURCE_DIRS = ['src', 'producers', 'workers', 'scripts', 'bin', 'config'];
const NAME = String.raw`[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+`;
/** `process.env.X`, `process.env['X']`, and `env.X` / `env['X']` on a parsed or passed-on environment. */
const READS = new RegExp(String.raw`\benv(?:\.(${NAME})\b|\[\s*['"\`](${NAME})['"\`]\s*\])`, 'g');
/** In a file that reads the raw environment, names it looks up indirectly (`flag(env, 'X')`, lists of names). */
const QUOTED = new RegExp(String.raw`['"\`](${NAME})['"\`]`, 'g');
/** Read by the OpenTelemetry exporter itself, not by our code, and documented for operators. */
const READ_BY_LIBRARIES = new Set([
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

function variablesReadInCode(): Set<string> {
  const names = new Set(Object.keys(envSchema.shape));
  for (const file of SOURCE_DIRS.flatMap((dir) => sourceFiles(join(ROOT, dir)))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(READS)) names.add((match[1] ?? match[2])!);
    if (/process\.env|ProcessEnv/.test(text)) {
      for (const match of text.matchAll(QUOTED)) names.add(match[1]!);
    }
  }
  return names;
}

const page = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
/** Names in the first cell of each table row: the variables the page describes. */
const documented = new Set(
  page
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) =>
      [...(line.split('|')[1] ?? '').matchAll(new RegExp(`\`(${NAME})\``, 'g'))].map((m) => m[1]!),
    ),
);

describe('docs/configuration.md', () => {
  const read = variablesReadInCode();

  it('finds the variables read outside the schema (the scan works)', () => {
    for (const name of [
      'OTEL_SDK_DISABLED',
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      'AGENT_FLEET_DEMO',
      'NODE_ENV',
    ]) {
      expect(read.has(name), name).toBe(true);
    }
    expect(read.size).toBeGreaterThan(80);
  });

  it('describes every variable the code reads, in a table row of its own', () => {
    const missing = [...read].filter((name) => !documented.has(name)).sort();
    expect(missing, 'read in code but not in a table of docs/configuration.md').toEqual([]);
  });

  it('describes no variable the code does not read', () => {
    const stale = [...documented].filter((name) => !read.has(name) && !READ_BY_LIBRARIES.has(name)).sort();
    expect(stale, 'in docs/configuration.md but read nowhere').toEqual([]);
  });

  it('gives the schema default of every variable that has one', () => {
    const rows = new Map(
      page
        .split('\n')
        .filter((line) => line.startsWith('| `'))
        .map((line) => [line.split('|')[1]!.trim(), line.split('|')[2]!.trim()] as const),
    );
    for (const [name, schema] of Object.entries(envSchema.shape)) {
      const value = (schema as { safeParse(v: unknown): { success: boolean; data?: unknown } }).safeParse(
        undefined,
      );
      if (!value.success || value.data === undefined) continue;
      const shown = Array.isArray(value.data) ? value.data.join(',') : String(value.data);
      const cell = rows.get(`\`${name}\``);
      expect(cell, `${name} has a row of its own`).toBeDefined();
      expect(cell!.replace(/,(?=\d{3})/g, ''), `${name}: default ${shown}`).toContain(
        typeof value.data === 'boolean' ? (value.data ? '1' : '0') : shown,
      );
    }
  });
});
