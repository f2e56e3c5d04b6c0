// FleetMetrics and its servers: exact sample lines after hand-made traces and results, bounded labels,
// queue depths read from a real BullMQ queue on real Redis, and a scrape that stays fast when Redis is
// unreachable.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { FleetMetrics, type WatchedQueue } from '../../../src/metrics/fleet-metrics.js';
import { metricsHandler, startMetricsServer } from '../../../src/metrics/metrics-server.js';
import { RESULTS_QUEUE, TASKS_QUEUE } from '../../../src/queue/names.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const PROM_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function trace(fields: Partial<StepTrace> = {}): StepTrace {
  return {
    runId: 'run-1',
    step: 1,
    kind: 'action',
    actions: [],
    observations: [],
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
    latencyMs: 0,
    modelLatencyMs: 0,
    modelCalls: 0,
    error: null,
    totals: {
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      costUsd: 0,
      steps: 1,
      maxSteps: 10,
      toolCalls: 0,
    },
    ...fields,
  };
}

function action(
  tool: string,
  latencyMs: number,
  errorCode: string | null = null,
): StepTrace['actions'][number] {
  return { id: `call-${tool}-${latencyMs}`, tool, args: {}, ok: errorCode === null, errorCode, latencyMs };
}

function result(status: AgentResult['status'], stopReason: AgentResult['stopReason']): AgentResult {
  return {
    jobId: 'job-1',
    status,
    stopReason,
    answer: status === 'succeeded' ? 'done' : null,
    steps: 2,
    toolCalls: 1,
    usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15, costUsd: 0.01 },
    error: null,
  };
}

/** The sample lines of a scrape, comments left out. */
async function samples(metrics: FleetMetrics): Promise<string[]> {
  return (await metrics.metrics()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

describe('observing traces and results', () => {
  const metrics = new FleetMetrics({ knownTools: ['sql_query', 'send_email'] });

  beforeAll(() => {
    metrics.observeStep(
      trace({
        kind: 'action',
        promptTokens: 1200,
        completionTokens: 80,
        costUsd: 0.25,
        modelLatencyMs: 3000,
        modelCalls: 2,
        actions: [
          action('sql_query', 250),
          action('sql_query', 500, 'sql_refused'),
          action('rm_rf', 4, 'unknown_tool'),
          action('send_email', 1500, 'some_new_code'),
        ],
      }),
    );
    metrics.observeStep(
      trace({
        step: 2,
        kind: 'answer',
        promptTokens: 1500,
        completionTokens: 40,
        cachedPromptTokens: 1024,
        reasoningTokens: 16,
        costUsd: 0.125,
        modelLatencyMs: 500,
        modelCalls: 1,
      }),
    );
    // A kind the kernel does not have: bounded like the rest.
    metrics.observeStep(trace({ step: 3, kind: 'surprise' as StepTrace['kind'] }));
    metrics.observeResult(result('succeeded', 'answer'));
    metrics.observeResult(result('succeeded', 'answer'));
    metrics.observeResult(result('stopped', 'max_steps'));
    metrics.observeResult(result('failed', 'error'));
    metrics.observeResult(
      result('exploded' as AgentResult['status'], 'whatever' as AgentResult['stopReason']),
    );
  });

  it('counts jobs by outcome and stop reason', async () => {
    const lines = await samples(metrics);
    expect(lines).toContain('agentfleet_jobs_total{outcome="succeeded",stop_reason="answer"} 2');
    expect(lines).toContain('agentfleet_jobs_total{outcome="stopped",stop_reason="max_steps"} 1');
    expect(lines).toContain('agentfleet_jobs_total{outcome="failed",stop_reason="error"} 1');
    expect(lines).toContain('agentfleet_jobs_total{outcome="other",stop_reason="other"} 1');
  });

  it('counts steps, tokens and cost', async () => {
    const lines = await samples(metrics);
    expect(lines).toContain('agentfleet_steps_total{kind="action"} 1');
    expect(lines).toContain('agentfleet_steps_total{kind="answer"} 1');
    expect(lines).toContain('agentfleet_steps_total{kind="other"} 1');
    expect(lines).toContain('agentfleet_tokens_total{type="prompt"} 2700');
    expect(lines).toContain('agentfleet_tokens_total{type="completion"} 120');
    // Parts of those totals, in a counter of their own so that summing tokens_total stays right.
    expect(lines).toContain('agentfleet_token_details_total{type="cached_prompt"} 1024');
    expect(lines).toContain('agentfleet_token_details_total{type="reasoning"} 16');
    expect(lines).toContain('agentfleet_cost_usd_total 0.375');
  });

  it('observes each model call, a step’s model time spread over its calls', async () => {
    const lines = await samples(metrics);
    // 3000 ms over 2 calls (1.5 s each), then 500 ms in 1 call; the step without calls adds nothing.
    expect(lines).toContain('agentfleet_model_call_duration_seconds_count 3');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_sum 3.5');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="0.25"} 0');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="0.5"} 1');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="1"} 1');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="2"} 3');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="60"} 3');
    expect(lines).toContain('agentfleet_model_call_duration_seconds_bucket{le="+Inf"} 3');
  });

  it("times the run journal's store writes, in seconds, in buckets fine enough for a p99 of milliseconds", async () => {
    const writes = new FleetMetrics({ defaultMetrics: false });
    for (const ms of [0.5, 2.5, 2.5, 40, 3000]) writes.observeStoreWrite(ms);
    writes.observeStoreWrite(Number.NaN);
    const lines = await samples(writes);
    expect(lines).toContain('agentfleet_store_write_seconds_count 6');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="0.001"} 2');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="0.002"} 2');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="0.003"} 4');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="0.0075"} 4');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="0.05"} 5');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="2.5"} 5');
    expect(lines).toContain('agentfleet_store_write_seconds_bucket{le="+Inf"} 6');
  });

  it('times tool calls by tool, an unknown tool as other', async () => {
    const lines = await samples(metrics);
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="sql_query"} 2');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_sum{tool="sql_query"} 0.75');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_bucket{le="0.25",tool="sql_query"} 1');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_bucket{le="0.5",tool="sql_query"} 2');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="other"} 1');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_sum{tool="other"} 0.004');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="send_email"} 1');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_sum{tool="send_email"} 1.5');
    expect(lines.join('\n')).not.toContain('rm_rf');
  });

  it("labels the fleet configuration's own tools as themselves once told of them", async () => {
    const fleet = new FleetMetrics({ defaultMetrics: false });
    const call = { id: 'c1', tool: 'fetch_kpis', args: {}, ok: true, errorCode: null, latencyMs: 10 };
    fleet.observeStep(trace({ actions: [call] }));
    fleet.knowTools(['fetch_kpis']);
    fleet.observeStep(trace({ actions: [call] }));
    const lines = await samples(fleet);
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="other"} 1');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="fetch_kpis"} 1');
  });

  it('counts tool errors by tool and code, unknown codes as other', async () => {
    const lines = await samples(metrics);
    expect(lines.filter((line) => line.startsWith('agentfleet_tool_errors_total')).sort()).toEqual([
      'agentfleet_tool_errors_total{tool="other",code="unknown_tool"} 1',
      'agentfleet_tool_errors_total{tool="send_email",code="other"} 1',
      'agentfleet_tool_errors_total{tool="sql_query",code="sql_refused"} 1',
    ]);
    expect(lines.join('\n')).not.toContain('some_new_code');
  });

  it('counts side effects left uncertain by results, and emails the sweeper settled', async () => {
    const counted = new FleetMetrics({ defaultMetrics: false });
    const effect = { tool: 'send_email', callKey: 'j:1:1', what: 'email', why: 'lookup down' };
    counted.observeResult({ ...result('succeeded', 'answer'), uncertainEffects: [effect, effect] });
    counted.observeResult(result('succeeded', 'answer'));
    counted.observeEmailSettlement('sent');
    counted.observeEmailSettlement('uncertain');
    const lines = await samples(counted);
    expect(lines).toContain('agentfleet_uncertain_effects_total 2');
    expect(lines).toContain('agentfleet_email_settlements_total{outcome="sent"} 1');
    expect(lines).toContain('agentfleet_email_settlements_total{outcome="uncertain"} 1');
  });

  it('includes the process metrics, prefixed', async () => {
    const text = await metrics.metrics();
    expect(text).toMatch(/^agentfleet_process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^agentfleet_nodejs_heap_size_used_bytes \d/m);
    expect(metrics.contentType).toBe(PROM_CONTENT_TYPE);
  });

  it('keeps each instance apart, off the global registry', async () => {
    const other = new FleetMetrics();
    other.observeResult(result('stopped', 'deadline'));
    expect(await samples(other)).toContain(
      'agentfleet_jobs_total{outcome="stopped",stop_reason="deadline"} 1',
    );
    expect(await samples(metrics)).not.toContain(
      'agentfleet_jobs_total{outcome="stopped",stop_reason="deadline"} 1',
    );
    const { register } = await import('prom-client');
    expect(await register.metrics()).not.toContain('agentfleet_');
  });

  it('defaults to the fleet’s tools', async () => {
    const fleet = new FleetMetrics({ defaultMetrics: false });
    fleet.observeStep(trace({ actions: [action('describe_table', 10), action('drop_table', 10)] }));
    const lines = await samples(fleet);
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="describe_table"} 1');
    expect(lines).toContain('agentfleet_tool_call_duration_seconds_count{tool="other"} 1');
    expect(lines.some((line) => line.startsWith('agentfleet_process_'))).toBe(false);
  });
});

describe('queue depth from real Redis', () => {
  const prefix = `metrics-test-${randomUUID()}`;
  let connection: Redis;
  let tasks: Queue;
  let results: Queue;

  beforeAll(async () => {
    connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    tasks = new Queue(TASKS_QUEUE, { connection, prefix });
    results = new Queue(RESULTS_QUEUE, { connection, prefix });
    await tasks.addBulk([1, 2, 3].map((n) => ({ name: 'agent-task', data: { task: `task ${n}` } })));
    await tasks.add('agent-task', { task: 'later' }, { delay: 60_000 });
  });

  afterAll(async () => {
    await tasks.obliterate({ force: true });
    await results.obliterate({ force: true });
    await tasks.close();
    await results.close();
    expect(await connection.keys(`${prefix}:*`)).toEqual([]);
    connection.disconnect();
  });

  it('reports every watched queue by state on scrape', async () => {
    const metrics = new FleetMetrics();
    metrics.watchQueues([tasks, results]);
    const lines = await samples(metrics);
    expect(lines).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="waiting"} 3');
    expect(lines).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="delayed"} 1');
    expect(lines).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="active"} 0');
    expect(lines).toContain('agentfleet_queue_jobs{queue="agent-results",state="waiting"} 0');
    expect(lines.filter((line) => line.startsWith('agentfleet_queue_jobs{')).length).toBe(2 * 7);
    expect(lines).toContain('agentfleet_scrape_errors_total{queue="agent-tasks"} 0');

    // Read again on every scrape.
    await tasks.add('agent-task', { task: 'one more' });
    expect(await samples(metrics)).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="waiting"} 4');
  });
});

describe('queue depth when Redis is slow or away', () => {
  it('keeps the last values and counts the error when a queue does not answer in time', async () => {
    let calls = 0;
    const queue: WatchedQueue = {
      name: 'agent-tasks',
      getJobCounts: () => {
        calls++;
        return calls === 1 ? Promise.resolve({ waiting: 7, active: 2 }) : new Promise(() => undefined);
      },
    };
    const metrics = new FleetMetrics({ queueTimeoutMs: 50, defaultMetrics: false });
    metrics.watchQueues([queue, queue]);

    const first = await samples(metrics);
    expect(first).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="waiting"} 7');
    expect(first).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="active"} 2');
    expect(first).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="failed"} 0');

    for (const errors of [1, 2]) {
      const lines = await samples(metrics);
      expect(lines).toContain('agentfleet_queue_jobs{queue="agent-tasks",state="waiting"} 7');
      expect(lines).toContain(`agentfleet_scrape_errors_total{queue="agent-tasks"} ${errors}`);
    }
    // The request that never answered is shared, not repeated on every scrape.
    expect(calls).toBe(2);
  });

  it('returns within a second when Redis is unreachable, counting the error', async () => {
    const port = await closedPort();
    // A connection that keeps retrying and queues every command, as a worker's does while Redis is away.
    const connection = new Redis({
      host: '127.0.0.1',
      port,
      maxRetriesPerRequest: null,
      retryStrategy: () => 100,
    });
    connection.on('error', () => undefined);
    const queue = new Queue(TASKS_QUEUE, { connection, prefix: `metrics-test-${randomUUID()}` });
    queue.on('error', () => undefined);
    try {
      const metrics = new FleetMetrics();
      metrics.watchQueues([queue]);
      for (const errors of [1, 2]) {
        const started = performance.now();
        const lines = await samples(metrics);
        expect(performance.now() - started).toBeLessThan(1000);
        expect(lines).toContain(`agentfleet_scrape_errors_total{queue="agent-tasks"} ${errors}`);
        expect(lines.some((line) => line.startsWith('agentfleet_queue_jobs{'))).toBe(false);
        // The rest of the scrape is all there.
        expect(lines.some((line) => line.startsWith('agentfleet_process_cpu_user_seconds_total'))).toBe(true);
      }
    } finally {
      connection.disconnect();
      await queue.close();
    }
  });
});

describe('serving the metrics', () => {
  const metrics = new FleetMetrics();
  metrics.observeResult(result('succeeded', 'answer'));

  it('answers GET /metrics in the text format, and 404 elsewhere', async () => {
    const server = await startMetricsServer(metrics, { port: 0, host: '127.0.0.1' });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      const ok = await fetch(`${base}/metrics`);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toBe(PROM_CONTENT_TYPE);
      expect(await ok.text()).toContain(
        'agentfleet_jobs_total{outcome="succeeded",stop_reason="answer"} 1\n',
      );

      const query = await fetch(`${base}/metrics?x=1`);
      expect(query.status).toBe(200);
      await query.arrayBuffer();

      for (const path of ['/', '/metricsx', '/v1/tasks']) {
        const missing = await fetch(`${base}${path}`);
        expect(missing.status).toBe(404);
        await missing.arrayBuffer();
      }
      const post = await fetch(`${base}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      await post.arrayBuffer();
    } finally {
      await server.close();
    }
    await server.close();
  });

  it('listens on 127.0.0.1 unless told otherwise', async () => {
    const server = await startMetricsServer(metrics, { port: 0 });
    try {
      expect((server.server.address() as AddressInfo).address).toBe('127.0.0.1');
    } finally {
      await server.close();
    }
  });

  it('rejects when the port is taken', async () => {
    const first = await startMetricsServer(metrics, { port: 0, host: '127.0.0.1' });
    try {
      await expect(startMetricsServer(metrics, { port: first.port, host: '127.0.0.1' })).rejects.toThrow(
        /EADDRINUSE/,
      );
    } finally {
      await first.close();
    }
  });

  it('mounts on an express app', async () => {
    const app = express();
    app.get('/metrics', metricsHandler(metrics));
    const server = await new Promise<Server>((resolve) => {
      const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
    });
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(PROM_CONTENT_TYPE);
      expect(await res.text()).toContain(
        'agentfleet_jobs_total{outcome="succeeded",stop_reason="answer"} 1\n',
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
