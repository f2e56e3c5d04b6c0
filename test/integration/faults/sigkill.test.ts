// Fault suite, SIGKILL: ~30 email tasks through 3 workers, 10 of them killed with SIGKILL at seeded random
// moments (a model request or an email arriving, plus a random delay) and restarted. Nothing is lost and
// nothing is done twice: every task one result and one agent_runs row, every email exactly once, at most one
// repeated model call per kill. FAULT_SEED replays a run; the seed is printed with the figures.
import { isDeepStrictEqual } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/kernel/types.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  emailCounts,
  emailTask,
  emailTaskOf,
  emailTasksModel,
  repeatedCalls,
  type EmailTask,
} from '../../support/email-tasks.js';
import { printFigures, seconds } from '../../support/fault-figures.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { notExactlyOnce, resultsPerJob, runRecords, stallsPerJob } from '../../support/fleet-counts.js';
import { expectNativeTranscript } from '../../support/native-transcript.js';
import { faultSeed, seededRandom } from '../../support/seeded-random.js';

const SEED = faultSeed(20_261_201);
const TASKS = 30;
const KILLS = 10;
const WORKERS = 3;
// The fleet gives up a job whose worker died under it more than WORKER_MAX_STALLED_COUNT times (default 2: a
// job that keeps killing workers). Here the kills are the test's, not the job's: the limit is above them, so
// every task must finish and send every email.
const MAX_STALLS = KILLS + 1;

const random = seededRandom(SEED);
const tasks: EmailTask[] = Array.from({ length: TASKS }, (_, i) => emailTask(`k${i}`, random.int(1, 3)));
// Model requests (one per step: the emails, then the answer) and emails: the events a kill can follow.
const expectedEvents = tasks.reduce((sum, t) => sum + 2 * t.emails + 1, 0);
const killPlan = (() => {
  const moments = new Set<number>();
  while (moments.size < KILLS) moments.add(random.int(3, Math.floor(expectedEvents * 0.75)));
  return [...moments]
    .sort((a, b) => a - b)
    .map((afterEvent) => ({ afterEvent, delayMs: random.int(0, 400), slot: random.int(0, WORKERS - 1) }));
})();

let model: ScriptedModelServer;
let sink: SmtpSink;
let ns: FleetNamespace;
const slots: WorkerHandle[] = [];
const everyWorker: WorkerHandle[] = [];
let events = 0;
let planned = 0;
let killing: Promise<void> = Promise.resolve();
const kills: { afterEvent: number; slot: number; atMs: number }[] = [];
let startedAt = 0;

function worker(): WorkerHandle {
  const handle = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    // One job per worker: a kill interrupts at most one job, so "one repeated call per kill" is exact.
    WORKER_CONCURRENCY: '1',
    // A killed job's lock runs out in seconds, not a minute; every worker checks as often (BullMQ runs one
    // stalled check per interval, fleet wide).
    WORKER_LOCK_DURATION_MS: '4000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    EMAIL_PENDING_GRACE_MS: '1000',
    WORKER_MAX_STALLED_COUNT: String(MAX_STALLS),
    METRICS_PORT: '0',
  });
  everyWorker.push(handle);
  return handle;
}

function onEvent(): void {
  events++;
  while (planned < killPlan.length && events >= killPlan[planned]!.afterEvent) {
    const plan = killPlan[planned++]!;
    killing = killing.then(async () => {
      // A kill lands on a worker that runs, not on one still starting after the previous kill.
      const victim = slots[plan.slot]!;
      await victim.waitForOutput(/worker started/, 60_000).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, plan.delayMs));
      victim.child.kill('SIGKILL');
      await victim.exited;
      kills.push({ afterEvent: events, slot: plan.slot, atMs: Date.now() - startedAt });
      slots[plan.slot] = worker();
    });
  }
}

setupOrFail(async () => {
  ns = createNamespace('faults-kill');
  sink = await startSmtpSink({ onMessage: onEvent });
  model = await startScriptedModel({
    latencyMs: 150,
    rules: [
      (request) => {
        onEvent();
        return emailTasksModel(request);
      },
    ],
  });
});

afterAll(async () => {
  await Promise.all(everyWorker.map(killWorker));
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
});

it('10 SIGKILLs during email tasks: one result and one row per task, every email once, ≤1 repeat per kill', async () => {
  // Printed first, so a run that times out can still be replayed.
  printFigures('sigkill start', { seed: SEED, replay: `FAULT_SEED=${SEED}` });
  for (let i = 0; i < WORKERS; i++) slots.push(worker());
  await Promise.all(slots.map((w) => w.waitForOutput(/worker started/, 60_000)));
  startedAt = Date.now();
  const jobs = await ns.client.enqueueMany(tasks.map((t) => ({ task: t.task, tools: ['send_email'] })));
  const results: AgentResult[] = await Promise.all(
    jobs.map(({ jobId }) => ns.client.waitForResult(jobId, { timeoutMs: 240_000 })),
  );
  const durationMs = Date.now() - startedAt;
  await killing;
  const jobIds = jobs.map((j) => j.jobId);

  const published = await resultsPerJob(REDIS_URL, ns.prefix);
  const records = await runRecords(ns);
  const rowCounts = new Map(jobIds.map((id) => [id, records.get(id)?.length ?? 0]));
  // A job a kill interrupted is found stalled once for it: with one job per worker, a kill stalls at most one.
  // More stalls than kills mean a live worker lost a lock (figure `stalls`).
  const interrupted = await stallsPerJob(REDIS_URL, ns.prefix, jobIds);
  const totalStalls = [...interrupted.values()].reduce((a, b) => a + b, 0);
  const givenUp = results.filter((r) => r.status !== 'succeeded');
  const givenUpNames = new Set(givenUp.map((r) => tasks[jobIds.indexOf(r.jobId)]!.name));
  const finishedTasks = tasks.filter((t) => !givenUpNames.has(t.name));
  const mail = emailCounts(tasks, sink.messages);
  const finishedMail = emailCounts(finishedTasks, sink.messages);
  const stepsByName = new Map(tasks.map((t, i) => [t.name, results[i]!.steps]));
  const repeats = repeatedCalls(model.requests, stepsByName);
  const totalRepeats = [...repeats.values()].reduce((a, b) => a + b, 0);
  const expectedEmails = tasks.reduce((sum, t) => sum + t.emails, 0);
  printFigures('sigkill', {
    seed: SEED,
    tasks: TASKS,
    workers: WORKERS,
    kills: kills.length,
    stalls: totalStalls,
    tasksInterrupted: [...interrupted.values()].filter((n) => n > 0).length,
    maxStallsOneTask: Math.max(0, ...interrupted.values()),
    givenUpAfterRepeatedKills: givenUp.length,
    succeeded: results.filter((r) => r.status === 'succeeded').length,
    emailsExpected: expectedEmails,
    emailsReceived: mail.received,
    emailsMissing: mail.missing.length,
    emailsRepeated: mail.repeated.length,
    modelCalls: model.requests.length,
    repeatedCalls: totalRepeats,
    maxRepeatsOneTask: Math.max(0, ...repeats.values()),
    // Tasks a kill interrupted: their run was started again by another attempt.
    tasksRestarted: [...records.values()].flat().filter((r) => r.attempts > 1).length,
    resumedFromCheckpoint: everyWorker.reduce(
      (sum, w) => sum + (w.output().match(/resuming from checkpoint/g) ?? []).length,
      0,
    ),
    durationS: seconds(durationMs),
  });

  expect(kills).toHaveLength(KILLS);
  // Stalls beyond the kills (a live worker that lost its lock on an overloaded machine) are only reported:
  // the emails and the repeats below must hold even then.
  // Every task succeeds, however often it was killed under its worker.
  expect(
    givenUp.map(
      (r) => `${r.jobId} (stalled ${interrupted.get(r.jobId) ?? 0}x): ${r.status} ${r.error?.message}`,
    ),
  ).toEqual([]);
  results.forEach((r, i) => expect(r.steps, tasks[i]!.name).toBe(tasks[i]!.emails + 1));
  expect(notExactlyOnce(jobIds, published)).toEqual([]);
  expect(notExactlyOnce(jobIds, rowCounts)).toEqual([]);
  // Every step's trace in agent_steps, once: what a killed worker parked is written by the job's next attempt.
  jobIds.forEach((id, i) =>
    expect(records.get(id)?.[0]?.stepRows, `${tasks[i]!.name} step rows`).toBe(results[i]!.steps),
  );
  // Every email exactly once; none twice, none unexpected.
  expect(mail.missing).toEqual([]);
  expect(finishedMail.missing).toEqual([]);
  expect(mail).toMatchObject({ repeated: [], unexpected: [] });
  expect(new Set(sink.messages.map((m) => m.messageId)).size).toBe(sink.messages.length);
  // One job per worker: each kill interrupts at most one job, which repeats at most the call in flight.
  expect(totalRepeats).toBeLessThanOrEqual(KILLS);
  jobIds.forEach((id, i) => {
    const n = repeats.get(tasks[i]!.name) ?? 0;
    expect(n, tasks[i]!.name).toBeGreaterThanOrEqual(0);
    expect(n, `${tasks[i]!.name} repeats vs kills under it`).toBeLessThanOrEqual(interrupted.get(id) ?? 0);
  });
  // What the model is sent survives the kills: each request of a task extends the one before it, the resumed
  // attempt's too (a call asked again after a kill repeats an earlier request exactly, and counts once).
  for (const task of tasks) {
    const sent = model.requests.filter((r) => emailTaskOf(r)?.name === task.name);
    const distinct = sent.filter(
      (r, i) => !sent.slice(0, i).some((earlier) => isDeepStrictEqual(earlier.messages, r.messages)),
    );
    expectNativeTranscript(distinct);
  }
  expect(model.failures).toEqual([]);
}, 300_000);
