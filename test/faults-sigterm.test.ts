// Fault suite, SIGTERM as deployed: the worker started with the Dockerfile's own CMD (read from the file), 20
// email jobs in flight on a slow model, then SIGTERM to that process as Docker sends it, and again a second
// later. It logs "worker stopped", exits 0 and leaves nothing running; no job is lost: each finished within
// the grace period or was checkpointed, and a second worker completes the rest without a repeated email.
import { afterAll, expect, it } from 'vitest';
import type { AgentResult } from '../src/kernel/types.js';
import { startSmtpSink, type SmtpSink } from '../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { dockerfileCommand } from './support/dockerfile-command.js';
import {
  emailCounts,
  emailTask,
  emailTaskOf,
  emailTasksModel,
  type EmailTask,
} from './support/email-tasks.js';
import { printFigures, seconds } from './support/fault-figures.js';
import { sessionLeftovers } from './support/process-group.js';
import { setupOrFail } from './support/setup-or-fail.js';
import { notExactlyOnce, resultsPerJob, runRecords } from './support/fleet-counts.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from './support/fleet-harness.js';

const JOBS = 20;
const GRACE_MS = 6_000;
// 1 to 3 emails: the short jobs finish within the grace period, the long ones are checkpointed.
const tasks: EmailTask[] = Array.from({ length: JOBS }, (_, i) => emailTask(`t${i}`, 1 + (i % 3)));
const command = dockerfileCommand();

let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
let deployed: WorkerHandle | undefined;
let rescuer: WorkerHandle | undefined;
let allInFlight: () => void = () => undefined;
const inFlight = new Promise<void>((resolve) => (allInFlight = resolve));
const seen = new Set<string>();

setupOrFail(async () => {
  ns = createNamespace('faults-term');
  sink = await startSmtpSink();
  model = await startScriptedModel({
    latencyMs: 1_500,
    rules: [
      (request) => {
        const task = emailTaskOf(request);
        if (task) seen.add(task.name);
        if (seen.size === JOBS) allInFlight();
        return emailTasksModel(request);
      },
    ],
  });
});

afterAll(async () => {
  if (deployed) await killWorker(deployed);
  if (rescuer) await killWorker(rescuer);
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

it(`SIGTERM with 20 jobs in flight through the Dockerfile's CMD: exit 0, "worker stopped", no job lost`, async () => {
  const env = {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    WORKER_CONCURRENCY: String(JOBS),
    WORKER_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    WORKER_LOCK_DURATION_MS: '5000',
    WORKER_STALLED_INTERVAL_MS: '2000',
    EMAIL_PENDING_GRACE_MS: '1000',
    METRICS_PORT: '0',
  };
  // A process group of its own: the signal still goes to the main process only, as Docker sends it to PID 1,
  // and whatever the command left behind can be found and ended.
  deployed = startWorker(ns, env, { command, detached: true });
  const jobs = await ns.client.enqueueMany(tasks.map((t) => ({ task: t.task, tools: ['send_email'] })));
  const jobIds = jobs.map((j) => j.jobId);
  await inFlight;
  const termAt = Date.now();
  // As Docker does it: to the main process only. A second one a second later (an impatient operator, an
  // orchestrator's retry) must not cut the shutdown short.
  deployed.child.kill('SIGTERM');
  const again = setTimeout(() => deployed?.child.kill('SIGTERM'), 1_000);
  const exit = await Promise.race([
    deployed.exited,
    new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), GRACE_MS + 30_000)),
  ]);
  clearTimeout(again);
  const shutdownMs = Date.now() - termAt;
  // Nothing of the command may outlive it (the wrappers' children get a moment to notice and go).
  const leftBehind = await sessionLeftovers(deployed.child.pid!);
  const finishedBeforeExit = (await Promise.all(jobIds.map((id) => ns.client.getResult(id)))).filter(
    Boolean,
  ).length;
  const output = deployed.output();
  await killWorker(deployed);

  const secondStartAt = Date.now();
  rescuer = startWorker(ns, { ...env, WORKER_SHUTDOWN_GRACE_MS: '25000' });
  const results: AgentResult[] = await Promise.all(
    jobIds.map((id) => ns.client.waitForResult(id, { timeoutMs: 120_000 })),
  );
  const completedBySecondMs = Date.now() - secondStartAt;
  const published = await resultsPerJob(REDIS_URL, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  const mail = emailCounts(tasks, sink.messages);
  printFigures('sigterm', {
    command: JSON.stringify(command),
    jobsInFlight: seen.size,
    exitCode: exit === 'timeout' ? 'none' : String(exit.code),
    exitSignal: exit === 'timeout' ? 'none' : String(exit.signal),
    workerStopped: /worker stopped/.test(output),
    leftBehind: leftBehind.length,
    shutdownS: seconds(shutdownMs),
    finishedBeforeExit,
    releasedOnShutdown: JOBS - finishedBeforeExit,
    succeeded: results.filter((r) => r.status === 'succeeded').length,
    emailsReceived: mail.received,
    emailsRepeated: mail.repeated.length,
    emailsMissing: mail.missing.length,
    completedBySecondS: seconds(completedBySecondMs),
  });

  expect(seen.size).toBe(JOBS);
  expect(exit).toEqual({ code: 0, signal: null });
  expect(output).toMatch(/worker stopped/);
  expect(leftBehind).toEqual([]);
  expect(
    results
      .filter((r) => r.status !== 'succeeded')
      .map((r) => `${r.jobId}: ${r.status} ${r.stopReason} ${r.error?.code} ${r.error?.message}`),
  ).toEqual([]);
  tasks.forEach((t, i) => expect(results[i]!.steps, t.name).toBe(t.emails + 1));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  expect(mail).toMatchObject({ missing: [], repeated: [], unexpected: [] });
  expect(model.failures).toEqual([]);
}, 240_000);
