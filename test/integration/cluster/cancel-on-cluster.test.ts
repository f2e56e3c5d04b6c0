// Cancelling on a Redis Cluster: a running task is told through the cancel channel (pub/sub, which a cluster
// spreads to every node) and stops at once, from the client library and from the CLI's `--cancel`, both on
// REDIS_CLUSTER_NODES with a braced prefix. The model holds its answer for a minute: only the message stops it.
import { spawn } from 'node:child_process';
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
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let cluster: LocalCluster;
let model: ScriptedModelServer;
let ns: FleetNamespace;
let client: FleetClient;
let worker: WorkerHandle;

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');

/** `hold <name>`: a note, then an answer the model holds for a minute. */
function holdModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  if (!task.startsWith('hold ')) return undefined;
  if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'note', args: { text: task } }] };
  return { answer: `${task} done`, latencyMs: 60_000 };
}

/** Enqueues `task` and waits until its second model call is being held. */
async function held(task: string): Promise<string> {
  const { jobId } = await client.enqueue({ agent: 'worker', task });
  const deadline = Date.now() + 30_000;
  while (model.requests.filter((r) => taskOf(r) === task).length < 2) {
    if (Date.now() > deadline) throw new Error(`${task}: its second call never came`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return jobId;
}

setupOrFail(async () => {
  cluster = await startLocalCluster();
  ns = { ...createNamespace('cluster-cancel'), prefix: `{test-cancel-${randomBytes(4).toString('hex')}}` };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  model = await startScriptedModel({ rules: [holdModel] });
  worker = startWorker(ns, {
    REDIS_CLUSTER_NODES: cluster.nodes,
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/cancel.config.ts',
    WORKER_CONCURRENCY: '2',
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

it('the client cancels a running task on a cluster: it stops at once', async () => {
  const jobId = await held('hold client');
  expect(await client.cancelTask(jobId, { by: 'test' })).toMatchObject({
    outcome: 'cancelling',
    state: 'active',
  });
  const result = await client.waitForResult(jobId, { timeoutMs: 10_000 });
  expect(result).toMatchObject({ status: 'stopped', stopReason: 'cancelled', steps: 1 });
}, 60_000);

it('the CLI cancels a running task on a cluster: --cancel ID --wait prints the cancelled result', async () => {
  const jobId = await held('hold cli');
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'producers/cli.ts', '--cancel', jobId, '--wait', '--timeout', '20'],
        {
          cwd: REPO_ROOT,
          env: {
            ...process.env,
            REDIS_CLUSTER_NODES: cluster.nodes,
            QUEUE_PREFIX: ns.prefix,
            MYSQL_URL: ns.mysqlUrl,
            LOG_LEVEL: 'info',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    },
  );
  expect(run.code, run.stderr).toBe(0);
  const last = run.stdout.trim().split('\n').at(-1)!;
  expect(JSON.parse(last)).toMatchObject({ status: 'stopped', stopReason: 'cancelled' });
}, 60_000);
