// What each public entry reaches through its imports, read from the sources (no build, no services): the client
// needs bullmq, ioredis and zod only, at run time and in its declaration files, so its package depends on nothing
// else; the kernel reaches no adapter and does no I/O; the testing entry reaches no queue, store or vendor SDK. A
// failure names the chain of files that leads to the package, the import to cut.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importGraph, type ImportKind } from '../../support/import-graph.js';

const CLIENT_PACKAGES = ['bullmq', 'ioredis', 'zod'];
/** The packages of I/O and of the fleet's adapters, that neither the kernel nor the testing entry may reach. */
const ADAPTERS = [
  'bullmq',
  'ioredis',
  'mysql2',
  'express',
  'openai',
  'nodemailer',
  'smtp-server',
  'mailparser',
  'pino',
  'prom-client',
  '@bull-board/api',
  '@bull-board/express',
  '@modelcontextprotocol/sdk',
  'node-sql-parser',
];

function reached(entry: string, kind: ImportKind): string[] {
  return importGraph(entry, kind).packages.map(({ name, chain }) => `${name} <- ${chain.join(' <- ')}`);
}

const named = (lines: string[], allowed: (name: string) => boolean) =>
  lines.filter((line) => !allowed(line.split(' <- ')[0]!));

describe('the client entry', () => {
  it.each(['runtime', 'types'] as const)(
    'reaches bullmq, ioredis, zod and node built-ins only (%s)',
    (kind) => {
      const packages = reached('src/client.ts', kind);
      expect(named(packages, (name) => name.startsWith('node:') || CLIENT_PACKAGES.includes(name))).toEqual(
        [],
      );
      // The check sees the client's imports at all: it reaches each of the three.
      for (const name of CLIENT_PACKAGES)
        expect(packages.some((line) => line.startsWith(`${name} <-`))).toBe(true);
    },
  );

  it('is what the client package depends on, with the ranges of the project', () => {
    const root = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const client = JSON.parse(readFileSync('packages/client/package.json', 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies?: unknown;
      peerDependencies?: unknown;
    };
    expect(Object.keys(client.dependencies).sort()).toEqual(CLIENT_PACKAGES);
    for (const name of CLIENT_PACKAGES) expect(client.dependencies[name]).toBe(root.dependencies[name]);
    expect(client.peerDependencies).toBeUndefined();
  });
});

describe('the kernel and testing entries', () => {
  it.each(['src/kernel.ts', 'src/testing.ts'])('%s reaches no adapter', (entry) => {
    for (const kind of ['runtime', 'types'] as const) {
      expect(named(reached(entry, kind), (name) => !ADAPTERS.includes(name))).toEqual([]);
    }
  });

  it('the kernel does no I/O of its own: no network, file or process built-ins', () => {
    const io = /^node:(http|https|net|tls|dgram|dns|fs|fs\/promises|child_process|worker_threads)$/;
    expect(named(reached('src/kernel.ts', 'runtime'), (name) => !io.test(name))).toEqual([]);
  });
});

describe('the packages point at what the build makes', () => {
  const root = JSON.parse(readFileSync('package.json', 'utf8')) as {
    exports: Record<string, string | { types: string; default: string }>;
    bin: Record<string, string>;
  };
  /** ./dist/src/client.js → src/client.ts: the source tsc compiles to that file. */
  const sourceOf = (built: string) => built.replace(/^\.\/dist\//, '').replace(/\.(d\.ts|js)$/, '.ts');

  it('every export and the bin are compiled from an existing source, with its declarations', () => {
    const targets = Object.entries(root.exports).filter(([key]) => key !== './package.json');
    expect(targets.map(([key]) => key)).toEqual(['.', './client', './worker', './kernel', './testing']);
    for (const [, target] of targets) {
      if (typeof target === 'string') throw new Error(`export ${target} names no types`);
      expect(sourceOf(target.types)).toBe(sourceOf(target.default));
      expect(() => readFileSync(sourceOf(target.default))).not.toThrow();
    }
    expect(root.bin).toEqual({ 'agent-fleet': './dist/bin/agent-fleet.js' });
    expect(readFileSync(sourceOf(root.bin['agent-fleet']!), 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
  });
});
