// The supervisor's own behaviour, with a stand-in child (test/fixtures/fake-worker.mjs) so it takes seconds and
// no services: restarts with a doubling delay, a crash loop reported as one, a stop that waits for every child
// and kills the ones that do not stop in time. test/integration/worker/supervisor.test.ts runs real workers.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logging/logger.js';
import { startSupervisor, type Supervisor } from '../../../src/worker/supervisor.js';

const ENTRY = 'test/fixtures/fake-worker.mjs';
const READY = mkdtempSync(join(tmpdir(), 'af-supervisor-'));
let supervisor: Supervisor | undefined;

afterAll(() => rmSync(READY, { recursive: true, force: true }));

afterEach(() => {
  supervisor?.kill();
  supervisor = undefined;
});

function logged() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('supervisor', 'info', destination) };
}

function start(
  mode: string,
  processes: number,
  logger: ReturnType<typeof logged>['logger'],
  more: { execPath?: string; onConfigError?: (index: number) => void } = {},
) {
  supervisor = startSupervisor({
    processes,
    entry: ENTRY,
    execArgv: [],
    ...more,
    env: { ...process.env, FAKE_WORKER: mode, FAKE_READY_DIR: READY },
    metricsPort: 0,
    stopTimeoutMs: 1_500,
    logger,
    restarts: { baseMs: 100, maxMs: 400, stableMs: 5_000, crashLoopAfter: 3 },
  });
  return supervisor;
}

/** Every child has started and handles SIGTERM. */
const ready = (s: Supervisor) =>
  s.pids().every((pid) => pid !== undefined && existsSync(join(READY, String(pid))));

const until = async (check: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('the supervisor', () => {
  it('restarts a child that crashes, doubling the delay up to its cap, and reports the crash loop', async () => {
    const { lines, logger } = logged();
    const s = start('crash', 1, logger);
    await until(() => lines.filter((l) => l.failures !== undefined).length >= 5);
    const exits = lines.filter((l) => l.failures !== undefined);
    expect(exits.slice(0, 5).map((l) => l.delayMs)).toEqual([100, 200, 400, 400, 400]);
    expect(exits[0]).toMatchObject({ level: 40, code: 3, processIndex: 0 });
    expect(exits[1]!.msg).toBe('worker process 0 exited (exit code 3): restarting in 200 ms');
    expect(exits[2]).toMatchObject({ level: 50, failures: 3 });
    expect(exits[2]!.msg).toMatch(/^worker process 0 is crash-looping: 3 exits in a row, each within 5 s/);
    // A stop while it waits to restart: nothing left to stop.
    expect(await s.stop()).toBe(true);
  });

  it('restarts a killed child at the same index; a stop ends every child and answers true', async () => {
    const { lines, logger } = logged();
    const s = start('run', 2, logger);
    await until(() => ready(s));
    const [first, second] = s.pids();
    process.kill(second!, 'SIGKILL');
    await until(() => ready(s) && s.pids()[1] !== second);
    expect(s.pids()[0]).toBe(first);
    expect(lines.find((l) => l.signal === 'SIGKILL')).toMatchObject({ processIndex: 1, delayMs: 100 });
    expect(await s.stop()).toBe(true);
    expect(s.pids()).toEqual([undefined, undefined]);
  });

  it('a child that cannot be started at all is tried again, and a stop does not wait for it', async () => {
    const { lines, logger } = logged();
    // Node emits 'error' for it, never 'exit'.
    const s = start('run', 1, logger, { execPath: join(READY, 'no-such-node') });
    await until(() => lines.filter((l) => l.failures !== undefined).length >= 2);
    const exits = lines.filter((l) => l.failures !== undefined);
    expect(exits[0]!.msg).toBe('worker process 0 exited (could not start): restarting in 100 ms');
    expect(lines.find((l) => l.msg === 'worker process error')).toMatchObject({ err: { code: 'ENOENT' } });
    const started = Date.now();
    expect(await s.stop()).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('a child that exits on a configuration error is not started again, and the supervisor is told', async () => {
    const { lines, logger } = logged();
    const told: number[] = [];
    const s = start('config', 2, logger, { onConfigError: (index) => told.push(index) });
    await until(() => told.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(told.sort()).toEqual([0, 1]);
    expect(lines.filter((l) => String(l.msg).includes('restarting'))).toEqual([]);
    expect(lines.find((l) => l.code === 78)!.msg).toMatch(
      /^worker process \d stopped on a configuration error \(its own line above says which\): not starting it again$/,
    );
    expect(s.pids()).toEqual([undefined, undefined]);
    expect(await s.stop()).toBe(true);
  });

  it('a child that a terminal’s SIGINT ends while it stops has stopped cleanly', async () => {
    const { logger } = logged();
    const s = start('stubborn', 2, logger);
    await until(() => ready(s));
    const stopped = s.stop();
    // The terminal's Ctrl-C reaches the children too; these have no SIGINT handler.
    for (const pid of s.pids()) process.kill(pid!, 'SIGINT');
    expect(await stopped).toBe(true);
  });

  it('asked to hurry while it stops, every child is told to (and stops, here), none is killed', async () => {
    const { lines, logger } = logged();
    const s = start('hurry', 2, logger);
    await until(() => ready(s));
    const started = Date.now();
    const stopped = s.stop();
    s.hurry();
    expect(await stopped).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_400);
    expect(lines.some((l) => String(l.msg).includes('killing them'))).toBe(false);
  });

  it('kills a child that does not stop within the timeout, and answers false', async () => {
    const { lines, logger } = logged();
    const s = start('stubborn', 2, logger);
    await until(() => ready(s));
    const started = Date.now();
    expect(await s.stop()).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(lines.at(-1)!.msg).toBe('worker processes 0, 1 did not stop within 1500 ms: killing them');
    expect(s.pids()).toEqual([undefined, undefined]);
  });
});
