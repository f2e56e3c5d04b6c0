// Agents that call agents on a Redis Cluster: a parent's three child agents run as jobs of their own on a real
// 3-master cluster (braced prefix), the parent parked meanwhile on one worker of concurrency 1, and resumed with
// each child's answer; each child has its result, and a run row naming its parent.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { turnsIn } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let worker: WorkerHandle;

/** The report writer asks three analysts at once, then answers with what they said. */
function reportModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = String(request.messages[1]?.content ?? '');
  const analyst = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (analyst) return { answer: `${analyst[1]} sales grew` };
  if (!task.startsWith('report on regions')) return undefined;
  if (turnsIn(request.messages) === 0) {
    return { actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'region_analyst', args: { region } })) };
  }
  const answers = request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  return { answer: `report: ${answers.join(' | ')}` };
}

setupOrFail(async () => {
  cluster = await startLocalCluster();
  ns = {
    ...createNamespace('cluster-children'),
    prefix: `{test-children-${randomBytes(4).toString('hex')}}`,
  };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  model = await startScriptedModel({ rules: [reportModel] });
  worker = startWorker(ns, {
    REDIS_CLUSTER_NODES: cluster.nodes,
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    WORKER_CONCURRENCY: '1',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await client?.close();
  if (cluster) {
    const redis = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'producer');
    await deleteKeysWithPrefix(redis, ns.prefix).finally(() => redis.disconnect());
  }
  await ns?.cleanup();
  await model?.close();
  await cluster?.close();
});

it('a parent calling three children on a cluster: each child a job of its own, the parent resumed', async () => {
  const { jobId } = await client.enqueue({ agent: 'report-writer', task: 'report on regions' });
  const result = await client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', steps: 2, toolCalls: 3 });
  expect(result.answer).toBe('report: EU sales grew | US sales grew | APAC sales grew');
  expect(result.children?.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  for (const child of result.children ?? []) {
    expect((await client.getResult(child.jobId))?.answer).toMatch(/sales grew$/);
  }
  const rows = await queryStore<{ job_id: string }>(
    ns,
    'SELECT job_id FROM agent_runs WHERE parent_job_id = ?',
    [jobId],
  );
  expect(rows.map((r) => r.job_id).sort()).toEqual((result.children ?? []).map((c) => c.jobId).sort());
  expect(worker.output()).not.toMatch(/CROSSSLOT|MOVED/);
}, 120_000);
