// Approvals as the operator sees them through a real worker (a real OTLP/HTTP receiver, Redis, MariaDB, an SMTP
// sink, the scripted model): while a call waits, the worker's /metrics counts it; the run that parked ends its
// invoke_agent span marked parked, not as an error; the job's next delivery continues the enqueue's trace, and the
// resumed run's span has an `approval_wait send_email` child from the request to the decision, with who decided;
// and the decision is counted by outcome.
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { freePort } from '../../../src/demo/free-port.js';
import { startTelemetry, type FleetTelemetry } from '../../../src/telemetry/fleet-telemetry.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import { openApprovals, type ApprovalsHarness } from '../../support/approvals-harness.js';
import { emailTask, emailTasksModel } from '../../support/email-tasks.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.js';
import { SeededDataDatabase } from '../../support/seeded-data-database.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let sink: SmtpSink;
let receiver: OtlpReceiver;
let ns: FleetNamespace;
let worker: WorkerHandle;
let approvals: ApprovalsHarness;
let metricsPort: number;
let producer: { telemetry: FleetTelemetry; client: FleetClient };
const data = new SeededDataDatabase('apwait');

setupOrFail(async () => {
  ns = createNamespace('apwait');
  await data.seed();
  sink = await startSmtpSink();
  receiver = await startOtlpReceiver();
  model = await startScriptedModel({ rules: [emailTasksModel] });
  metricsPort = await freePort(0);
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
    DATA_MYSQL_URL: data.readerUrl(),
    METRICS_PORT: String(metricsPort),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
    OTEL_GENAI_CAPTURE_CONTENT: '',
    OTEL_SERVICE_NAME: '',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  await worker.waitForOutput(/worker started/, 60_000);
  approvals = await openApprovals(ns);
  producer = await tracedProducer(receiver.url);
});

/** A client whose enqueues are traced to the receiver, so the worker's spans continue the producer's trace. */
async function tracedProducer(endpoint: string): Promise<{ telemetry: FleetTelemetry; client: FleetClient }> {
  // The exporter reads its endpoint from the environment when it is made: set for that moment only.
  const saved = process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = endpoint;
  try {
    const telemetry = (await startTelemetry({ serviceName: 'approval-waits-test' }))!;
    const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, telemetry: telemetry.bullmq });
    return { telemetry, client };
  } finally {
    if (saved === undefined) delete process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    else process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = saved;
  }
}

afterAll(async () => {
  if (worker) await killWorker(worker);
  await producer?.client.close();
  await producer?.telemetry.shutdown();
  await approvals?.close();
  await ns?.cleanup();
  const root = data.rootPool();
  await data.drop(root).finally(() => root.end());
  await sink?.close();
  await model?.close();
  await receiver?.close();
});

const scrape = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
const ms = (ns_: bigint): number => Number(ns_ / 1_000_000n);

it('a parked run, the wait and the decision: on /metrics and in the trace', async () => {
  const { jobId } = await producer.client.enqueue({
    task: emailTask('w1', 1).task,
    tools: ['send_email'],
    approval: 'side-effects',
  });
  const [asked] = await approvals.waitFor({ jobId, state: 'pending' }, 1);

  // While it waits: one call, fleet-wide, waiting for some seconds at most.
  const waiting = await scrape();
  expect(waiting).toMatch(/^agentfleet_approvals_pending 1$/m);
  const age = Number(/^agentfleet_approvals_oldest_pending_seconds (\S+)$/m.exec(waiting)?.[1]);
  expect(age).toBeGreaterThanOrEqual(0);
  expect(age).toBeLessThan(60);
  expect(waiting).toMatch(/^agentfleet_approval_decisions_total\{decision="approve"\} 0$/m);

  // The attempt that parked: its span ends marked parked, not as an error.
  const isRun = (s: ReceivedSpan) =>
    s.name === 'invoke_agent default' && s.attributes['agent_fleet.job.id'] === jobId;
  await receiver.waitFor((spans) => spans.some(isRun));
  const parked = receiver.spans.find(isRun)!;
  expect(parked.status.code).toBe(0);
  expect(parked.attributes).toMatchObject({
    'agent_fleet.run.stop_reason': 'awaiting_approval',
    'agent_fleet.run.parked': true,
    'agent_fleet.approval.awaiting': 1,
  });

  const outcome = await approvals.desk.decide(asked!.id, { decision: 'approve', by: 'alice' });
  expect(outcome.kind).toBe('decided');
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
  expect(result).toMatchObject({ status: 'succeeded', stopReason: 'answer' });
  const decided = (await approvals.desk.get(asked!.id))!;

  // The resumed run: its span has the wait as a child, from the request to the decision.
  const isWait = (s: ReceivedSpan) =>
    s.name === 'approval_wait send_email' && s.attributes['agent_fleet.approval.id'] === asked!.id;
  await receiver.waitFor((spans) => spans.some(isWait) && spans.filter(isRun).length >= 2);
  const wait = receiver.spans.find(isWait)!;
  const resumed = receiver.spans.find(
    (s) => isRun(s) && s.attributes['agent_fleet.run.stop_reason'] === 'answer',
  )!;
  expect(wait.parentSpanId).toBe(resumed.spanId);
  // One trace from the enqueue: each delivery of the job is a `process` span of it, the run's parent.
  expect(resumed.traceId).toBe(parked.traceId);
  const processOf = (run: ReceivedSpan) => receiver.spans.find((s) => s.spanId === run.parentSpanId);
  await receiver.waitFor(() => processOf(parked) !== undefined && processOf(resumed) !== undefined);
  expect(processOf(parked)?.name).toBe('process agent-tasks');
  expect(processOf(resumed)?.name).toBe('process agent-tasks');
  expect(processOf(resumed)?.spanId).not.toBe(processOf(parked)?.spanId);
  expect(wait.traceId).toBe(resumed.traceId);
  expect(wait).toMatchObject({ kind: 1, service: 'agent-fleet-worker', status: { code: 0 } });
  expect(Math.abs(ms(wait.startNs) - Date.parse(decided.requestedAt))).toBeLessThanOrEqual(1);
  expect(Math.abs(ms(wait.endNs) - Date.parse(decided.decidedAt!))).toBeLessThanOrEqual(1);
  expect(wait.attributes).toMatchObject({
    'gen_ai.tool.name': 'send_email',
    'agent_fleet.approval.id': asked!.id,
    'agent_fleet.approval.decision': 'approve',
    'agent_fleet.approval.decided_by': 'alice',
    'agent_fleet.approval.edited': false,
  });
  // Only one wait span for the call, however the job was woken.
  expect(receiver.spans.filter(isWait)).toHaveLength(1);

  const after = await scrape();
  expect(after).toMatch(/^agentfleet_approvals_pending 0$/m);
  expect(after).toMatch(/^agentfleet_approvals_oldest_pending_seconds 0$/m);
  expect(after).toMatch(/^agentfleet_approval_decisions_total\{decision="approve"\} 1$/m);
  expect(after).toMatch(/^agentfleet_approvals_scrape_errors_total 0$/m);
});
