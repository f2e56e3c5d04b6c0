// Several workers on one host with one METRICS_PORT: each serves its own /metrics on the next free port of
// METRICS_PORT_SPAN, and a worker left without a port refuses to start with a line naming the variable
// (it used to run without metrics, saying so only in its log).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetMetrics } from '../../../src/metrics/fleet-metrics.js';
import { MetricsPortsTakenError, startMetricsServer } from '../../../src/metrics/metrics-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';

/** `count` consecutive ports free on 127.0.0.1 right now, the first one returned. */
async function freeRun(count: number): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const first = 20_000 + Math.floor(Math.random() * 40_000);
    const held: net.Server[] = [];
    let ok = true;
    for (let i = 0; i < count && ok; i++) {
      const server = await hold(first + i).catch(() => null);
      if (server) held.push(server);
      else ok = false;
    }
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
    if (ok) return first;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

function hold(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

describe('startMetricsServer with a span', () => {
  it('takes the next free port when the first is in use, and names the variables when all are', async () => {
    const first = await freeRun(3);
    const taken = await hold(first);
    const metrics = new FleetMetrics();
    const server = await startMetricsServer(metrics, { port: first, span: 3 });
    try {
      expect(server.port).toBe(first + 1);
      expect(await scrape(`http://127.0.0.1:${server.port}/metrics`)).toMatch(/^agentfleet_/m);
      const third = await startMetricsServer(metrics, { port: first, span: 3 });
      expect(third.port).toBe(first + 2);
      const none = startMetricsServer(metrics, { port: first, span: 3 });
      await expect(none).rejects.toBeInstanceOf(MetricsPortsTakenError);
      await expect(none).rejects.toThrow(
        new RegExp(`^METRICS_PORT: ports ${first}-${first + 2} are all in use.*METRICS_PORT_SPAN`),
      );
      await third.close();
    } finally {
      await server.close();
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('a span of 1 is the port or nothing', async () => {
    const first = await freeRun(2);
    const taken = await hold(first);
    try {
      await expect(startMetricsServer(new FleetMetrics(), { port: first })).rejects.toThrow(
        `METRICS_PORT: port ${first} is in use`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe('workers sharing METRICS_PORT', () => {
  let ns: FleetNamespace;
  const workers: WorkerHandle[] = [];
  let base: number;

  beforeAll(async () => {
    ns = createNamespace('metricsports');
    base = await freeRun(3);
  });

  afterAll(async () => {
    await Promise.all(workers.map(killWorker));
    await ns.cleanup();
  });

  it('two workers both serve their metrics; a third without a free port exits naming METRICS_PORT', async () => {
    const env = { METRICS_PORT: String(base), METRICS_PORT_SPAN: '2' };
    const first = startWorker(ns, env);
    workers.push(first);
    await first.waitForOutput(/worker started/, 40_000);
    const second = startWorker(ns, env);
    workers.push(second);
    await second.waitForOutput(/worker started/, 40_000);

    const urls = [first, second].map((w) => /metrics on (http:\/\/[^\s"]+)/.exec(w.output())?.[1]);
    expect(urls).toEqual([`http://127.0.0.1:${base}/metrics`, `http://127.0.0.1:${base + 1}/metrics`]);
    for (const url of urls) expect(await scrape(url!)).toMatch(/^agentfleet_queue_jobs\{/m);
    expect(second.output()).not.toMatch(/metrics server not started/);

    const third = startWorker(ns, env);
    workers.push(third);
    const { code } = await third.exited;
    expect(code).toBe(1);
    expect(third.output()).toContain(`worker: METRICS_PORT: ports ${base}-${base + 1} are all in use`);
    expect(third.output()).not.toMatch(/worker started/);
  }, 90_000);
});
