// Approvals on a Redis Cluster: a task whose email needs a decision parks (BullMQ's delayed state) on a real
// 3-master cluster under a braced prefix, and `npm run approvals -- approve`, a process on REDIS_CLUSTER_NODES,
// wakes it: the email goes out exactly once and the task succeeds.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import type { Approval } from '../../../src/approvals/approval.js';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { deleteKeysWithPrefix } from '../../../src/queue/delete-prefix.js';
import { createRedis } from '../../../src/queue/redis.js';
import { redisTarget } from '../../../src/queue/redis-target.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { emailSubject, emailTask, emailTasksModel } from '../../support/email-tasks.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startLocalCluster, type LocalCluster } from '../../support/redis-cluster.js';
import { REPO_ROOT } from '../../support/repo-paths.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let cluster: LocalCluster;
let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
let client: FleetClient;
let worker: WorkerHandle;
const data = new SeededDataDatabase('clap');

setupOrFail(async () => {
  cluster = await startLocalCluster();
  ns = {
    ...createNamespace('cluster-approvals'),
    prefix: `{test-approvals-${randomBytes(4).toString('hex')}}`,
  };
  client = new FleetClient({ redisClusterNodes: cluster.nodes, prefix: ns.prefix });
  await data.seed();
  sink = await startSmtpSink();
  model = await startScriptedModel({ rules: [emailTasksModel] });
  worker = startWorker(ns, {
    REDIS_CLUSTER_NODES: cluster.nodes,
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    DATA_MYSQL_URL: data.readerUrl(),
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
  const root = data.rootPool();
  await data.drop(root).finally(() => root.end());
  await sink?.close();
  await model?.close();
  await cluster?.close();
});

function approvals(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/approvals.ts', ...args], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        MYSQL_URL: ns.mysqlUrl,
        REDIS_CLUSTER_NODES: cluster.nodes,
        QUEUE_PREFIX: ns.prefix,
        LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it('parked on a cluster, woken by the approvals command: the email sent exactly once', async () => {
  const { jobId } = await client.enqueue({
    task: emailTask('cl1', 1).task,
    tools: ['send_email'],
    approval: 'side-effects',
  });
  let pending: Approval[] = [];
  await expect
    .poll(
      async () => {
        const listed = await approvals(['list', '--job', jobId, '--state', 'pending', '--json']);
        pending = listed.code === 0 ? (JSON.parse(listed.stdout) as Approval[]) : [];
        return pending.length;
      },
      { timeout: 30_000, interval: 250 },
    )
    .toBe(1);
  await expect
    .poll(async () => (await client.getTask(jobId)).state, { timeout: 5_000 })
    .toBe('awaiting_approval');

  const approved = await approvals(['approve', pending[0]!.id]);
  expect(approved.stderr).toBe('');
  expect(approved.code).toBe(0);
  const result = await client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer', toolCalls: 1 });
  expect(sink.messages.filter((m) => m.subject === emailSubject('cl1', 1))).toHaveLength(1);
}, 120_000);
