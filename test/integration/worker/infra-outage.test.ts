// A MySQL outage of 25 s (the store and the data database, one server behind a proxy) while tasks run: the SQL tool
// cannot connect, which is not the model's mistake. The calls are run again after waits, then by the job's next
// attempts, and every task ends succeeded once MySQL is back: not `repeated_action`, and without one model call
// spent on the outage.
import { observationsIn } from '../../../src/testing/transcript.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  startWorker,
  type FleetNamespace,
} from '../../support/fleet-harness.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';

const TASKS = 8;
const OUTAGE_MS = 25_000;
const QUERY = 'SELECT COUNT(*) AS n FROM customers';

let server: ScriptedModelServer;
let ns: FleetNamespace;
let proxy: TcpProxy;

/** Queries; queries again while the query failed (as a model told "try again" would); answers once it worked. */
function persistentAnalyst(request: RecordedRequest) {
  const seen = observationsIn(request.messages);
  if (seen.length === 0 || /error/i.test(seen.at(-1) ?? '')) {
    return { actions: [{ tool: 'sql_query', args: { sql: QUERY } }] };
  }
  return { answer: `counted: ${seen.at(-1) ?? ''}` };
}

beforeAll(async () => {
  ns = createNamespace('infra');
  proxy = await startTcpProxy(3306);
  server = await startScriptedModel({ rules: [persistentAnalyst] });
});

afterAll(async () => {
  await proxy.close();
  await ns.cleanup();
  await server.close();
});

it('tasks caught by a 25 s MySQL outage all succeed after it, asking the model nothing more', async () => {
  const worker = startWorker(ns, {
    OPENAI_BASE_URL: server.baseURL,
    MYSQL_URL: `mysql://root@127.0.0.1:${proxy.port}/${ns.database}`,
    DATA_MYSQL_URL: `mysql://agent_reader:agent_reader@127.0.0.1:${proxy.port}/agent_fleet_demo`,
    WORKER_RETRY_BASE_MS: '1000',
    WORKER_RETRY_MAX_MS: '4000',
  });
  try {
    await worker.waitForOutput(/worker started/);
    await proxy.cut();
    const cutAt = Date.now();
    const jobs = await ns.client.enqueueMany(
      Array.from({ length: TASKS }, (_, i) => ({ task: `count the customers (${i})` })),
    );
    await worker.waitForOutput(/tool dependencies unavailable/, 20_000);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS - (Date.now() - cutAt)));
    await proxy.restore();

    const results: AgentResult[] = await Promise.all(
      jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 60_000 })),
    );
    for (const result of results) {
      expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', steps: 2, error: null });
      expect(result.answer).toBe('counted: n\n200');
    }
    // Every task asked the model twice (the query, the answer), and never saw the outage.
    expect(server.requests).toHaveLength(2 * TASKS);
    for (const request of server.requests)
      expect(JSON.stringify(request.messages)).not.toMatch(/connection/i);
    const runs = await queryStore<{ status: string; steps: number }>(
      ns,
      'SELECT status, steps FROM agent_runs ORDER BY job_id',
    );
    expect(runs).toHaveLength(TASKS);
    for (const run of runs) expect(run).toMatchObject({ status: 'succeeded', steps: 2 });
    const steps = await queryStore<{ n: number }>(ns, 'SELECT COUNT(*) AS n FROM agent_steps');
    expect(Number(steps[0]!.n)).toBe(2 * TASKS);
    // At least one job needed an attempt after the first: the outage outlasted the waits inside one.
    expect(worker.output()).toMatch(/run failed, will be retried/);
  } finally {
    await killWorker(worker);
  }
}, 120_000);
