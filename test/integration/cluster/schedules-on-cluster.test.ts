// Schedules on a Redis Cluster: a worker on REDIS_CLUSTER_NODES (braced prefix) registers a schedule that fires
// every second into a batch that runs to its summary, and the schedules CLI lists and removes it on the cluster.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
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
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import { stepsModel } from '../../support/steps-model.js';

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let dir: string;
let worker: WorkerHandle;

const schedules = {
  schedules: [
    { name: 'every-second', cron: '* * * * * *', batch: { tasks: [{ task: 'job tick: 1 steps' }] } },
  ],
};

setupOrFail(async () => {
  cluster = await startLocalCluster();
  ns = {
    ...createNamespace('cluster-schedules'),
    prefix: `{test-schedules-${randomBytes(4).toString('hex')}}`,
  };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  model = await startScriptedModel({ rules: [stepsModel] });
  dir = await mkdtemp(join(tmpdir(), 'af-schedules-'));
  await writeFile(join(dir, 'schedules.json'), JSON.stringify(schedules));
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
  if (dir) await rm(dir, { recursive: true, force: true });
});

function schedulesCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    REDIS_CLUSTER_NODES: cluster.nodes,
    QUEUE_PREFIX: ns.prefix,
    SCHEDULES_FILE: join(dir, 'schedules.json'),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/schedules.ts', ...args], { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

it('a schedule fires into a batch on a cluster, and the CLI lists and removes it there', async () => {
  worker = startWorker(ns, {
    REDIS_CLUSTER_NODES: cluster.nodes,
    OPENAI_BASE_URL: model.baseURL,
    AGENT_PROTOCOL: 'json',
    SCHEDULES_FILE: join(dir, 'schedules.json'),
  });
  await worker.waitForOutput(/worker started/, 60_000);
  await worker.waitForOutput(/"schedule":"every-second","batchId":"every-second-\d+"/, 15_000);
  const batchId = /"batchId":"(every-second-\d+)"/.exec(worker.output())![1]!;
  const status = await client.waitForBatch(batchId, { timeoutMs: 30_000 });
  expect(status.summary).toMatchObject({ tasks: 1, succeeded: 1 });

  const listed = await schedulesCli(['list']);
  expect(listed.stderr).toBe('');
  expect(listed.code).toBe(0);
  expect(listed.stdout).toMatch(/"name":"every-second"/);
  const removed = await schedulesCli(['remove', 'every-second']);
  expect(removed.code).toBe(0);
  expect((await schedulesCli(['list'])).stdout.trim()).toBe('');
}, 120_000);
