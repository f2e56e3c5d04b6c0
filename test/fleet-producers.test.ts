// A task from each producer (library, CLI, HTTP API) completes through a real worker process, and each
// producer sees the same result as the results queue and MySQL.
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../producers/http-api.js';
import type { AgentResult } from '../src/kernel/types.js';
import { createLogger } from '../src/logging/logger.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from './support/fleet-harness.js';

const TOKEN = 'producer-test-token-123456';
let server: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let api: Server;
let apiUrl: string;

beforeAll(async () => {
  // Two steps per task, whatever the task says: one tool call, then an answer naming the task; slow
  // enough that a follower sees the progress between them.
  server = await startScriptedModel({
    rules: [
      (r) =>
        r.messages.length === 2
          ? { actions: [{ tool: 'list_tables', args: {} }], latencyMs: 600 }
          : { answer: `answered: ${String(r.messages[1]?.content)}`, latencyMs: 600 },
    ],
  });
  ns = createNamespace('producers');
  worker = startWorker(ns, { OPENAI_BASE_URL: server.baseURL, AGENT_PROTOCOL: 'json' });
  const app = createApiServer({
    client: ns.client,
    token: TOKEN,
    logger: createLogger('api-test', 'silent'),
  });
  api = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  await worker.waitForOutput(/worker started/);
});

afterAll(async () => {
  await new Promise((resolve) => api.close(resolve));
  await killWorker(worker);
  await ns.cleanup();
  await server.close();
});

async function storedRun(jobId: string) {
  const [run] = await queryStore<Record<string, unknown>>(ns, 'SELECT * FROM agent_runs WHERE job_id = ?', [
    jobId,
  ]);
  return run;
}

function expectSameEverywhere(result: AgentResult, run: Record<string, unknown> | undefined) {
  expect(run).toMatchObject({
    job_id: result.jobId,
    status: result.status,
    stop_reason: result.stopReason,
    answer: result.answer,
    steps: result.steps,
    tool_calls: result.toolCalls,
    prompt_tokens: result.usage.promptTokens,
    completion_tokens: result.usage.completionTokens,
  });
}

describe('every producer', () => {
  it('library: enqueue and wait', async () => {
    const { jobId } = await ns.client.enqueue({ task: 'from the library' });
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 20_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'answered: from the library', steps: 2 });
    expect(await ns.client.getResult(jobId)).toEqual(result);
    expectSameEverywhere(result, await storedRun(jobId));
  });

  it('CLI: --wait follows progress on stderr and prints the result as the last line', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'producers/cli.ts',
        '--task',
        'from the CLI',
        '--max-steps',
        '5',
        '--wait',
        '--timeout',
        '30',
      ],
      { env: { ...process.env, REDIS_URL, QUEUE_PREFIX: ns.prefix } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    const lines = stdout.trim().split('\n');
    const { jobId } = JSON.parse(lines[0]!) as { jobId: string };
    const result = JSON.parse(lines.at(-1)!) as AgentResult;
    expect(result).toMatchObject({ jobId, status: 'succeeded', answer: 'answered: from the CLI' });
    expect(stderr).toMatch(/step 1\/5/);
    expect(await ns.client.getResult(jobId)).toEqual(result);
    expectSameEverywhere(result, await storedRun(jobId));
  });

  it('HTTP API: POST then GET until completed', async () => {
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const posted = await fetch(`${apiUrl}/v1/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ task: 'from the API' }),
    });
    expect(posted.status).toBe(202);
    const { jobId } = (await posted.json()) as { jobId: string };
    let body: { state: string; result: AgentResult | null; progress: unknown } | undefined;
    for (let i = 0; i < 100; i++) {
      const got = await fetch(`${apiUrl}/v1/tasks/${jobId}`, { headers });
      body = (await got.json()) as typeof body;
      // The result is published just before BullMQ moves the job to completed: wait for both.
      if (body?.result && body.state === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(body).toMatchObject({
      state: 'completed',
      result: { jobId, status: 'succeeded', answer: 'answered: from the API' },
    });
    expect(await ns.client.getResult(jobId)).toEqual(body!.result);
    expectSameEverywhere(body!.result!, await storedRun(jobId));
  });
});
