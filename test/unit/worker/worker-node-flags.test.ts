// Every way the project starts a worker gives it the same V8 flags (src/worker/worker-node-flags.ts): the npm
// script, the image, the compose file; the tests' and the benchmarks' workers import the list itself.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKER_NODE_FLAGS } from '../../../src/worker/worker-node-flags.js';

const read = (file: string) => readFileSync(new URL(`../../../${file}`, import.meta.url), 'utf8');

describe("the worker's V8 flags", () => {
  it('are a young generation sized for jobs that live across model calls', () => {
    expect(WORKER_NODE_FLAGS).toContain('--max-semi-space-size=64');
  });

  it('are on the command line of npm run worker, the image and the compose file, before the worker module', () => {
    const script = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts[
      'worker'
    ];
    expect(script).toBe(`exec node ${WORKER_NODE_FLAGS.join(' ')} --import tsx workers/agent-worker.ts`);
    const argv = JSON.stringify(['node', ...WORKER_NODE_FLAGS, '--import', 'tsx', 'workers/agent-worker.ts']);
    expect(read('Dockerfile')).toContain(`CMD ${argv.replaceAll(',', ', ')}`);
    expect(read('docker-compose.yml')).toContain(
      `command: ${argv.replaceAll('"', "'").replaceAll(',', ', ')}`,
    );
  });

  it('are what the tests and the benchmarks start their workers with', () => {
    expect(read('test/support/fleet-harness.ts')).toContain('...WORKER_NODE_FLAGS');
    expect(read('bench/lib/fleet.ts')).toContain('...WORKER_NODE_FLAGS');
  });
});
