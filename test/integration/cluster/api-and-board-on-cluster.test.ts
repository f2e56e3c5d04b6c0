// The HTTP API and the board as processes on a Redis Cluster (REDIS_CLUSTER_NODES, braced QUEUE_PREFIX): a task
// posted to the API runs on a worker of the same cluster, the API answers its status and its health, and the
// board lists the fleet's queues from the cluster.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startHttpProcess, type RunningHttpProcess } from '../../support/http-process.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

const TOKEN = 'cluster-api-token-0123456789abcdef';
let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
const processes: RunningHttpProcess[] = [];

setupOrFail(async () => {
  cluster = await startLocalCluster();
  ns = { ...createNamespace('cluster-api'), prefix: `{test-api-${randomBytes(4).toString('hex')}}` };
  model = await startScriptedModel({ rules: [stepsModel] });
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await Promise.all(processes.map((p) => p.stop()));
  if (cluster) {
    const redis = createRedis(redisTarget({ clusterNodes: cluster.nodes }), 'producer');
    await deleteKeysWithPrefix(redis, ns.prefix).finally(() => redis.disconnect());
  }
  await ns?.cleanup();
  await model?.close();
  await cluster?.close();
});

it('a task posted to the API on a cluster runs, and the board lists the queues', async () => {
  const fleet = { REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: ns.prefix, MYSQL_URL: ns.mysqlUrl };
  worker = startWorker(ns, { ...fleet, OPENAI_BASE_URL: model.baseURL, AGENT_PROTOCOL: 'json' });
  await worker.waitForOutput(/worker started/, 60_000);
  const api = await startHttpProcess(
    'producers/api.ts',
    { ...fleet, API_TOKEN: TOKEN, API_PORT: '0' },
    /API listening/,
  );
  processes.push(api);
  const base = `http://127.0.0.1:${api.listening.port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };

  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  const posted = await fetch(`${base}/v1/tasks`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ task: 'job api: 2 steps' }),
  });
  expect(posted.status).toBe(202);
  const { jobId } = (await posted.json()) as { jobId: string };
  await expect
    .poll(
      async () => {
        const status = (await (await fetch(`${base}/v1/tasks/${jobId}`, { headers: auth })).json()) as {
          state: string;
          result: { status: string; steps: number } | null;
        };
        return status.result && [status.state, status.result.status, status.result.steps];
      },
      { timeout: 30_000, interval: 200 },
    )
    .toEqual(['completed', 'succeeded', 2]);

  const board = await startHttpProcess(
    'producers/board.ts',
    { ...fleet, BOARD_USER: 'ops', BOARD_PASSWORD: 'board-password-0123', BOARD_PORT: '0' },
    /board listening/,
  );
  processes.push(board);
  const basic = { authorization: `Basic ${Buffer.from('ops:board-password-0123').toString('base64')}` };
  const queues = await fetch(`http://127.0.0.1:${board.listening.port}/api/queues`, { headers: basic });
  expect(queues.status).toBe(200);
  expect(await queues.text()).toMatch(/agent-tasks/);
}, 120_000);
