// One OpenTelemetry trace for a tree of agents, through two real workers (a real OTLP/HTTP receiver, Redis,
// MariaDB, the scripted model): a chain agent calls a child that calls a grandchild. Every run of the tree is in
// the trace of the producer's enqueue, and each child's `invoke_agent` is a child of its parent's
// `execute_tool chain` span, which spans the call from the launch to the parent's resume (recorded at the
// resume, perhaps on the other worker, with the span id the child was given). A job enqueued without a trace
// context starts a trace at each delivery: its call's span is recorded at the launch, and the tree still shares
// the launch's trace.
import { afterAll, expect, it } from 'vitest';
import { FleetClient } from '../../../src/client/fleet-client.js';
import { startTelemetry, type FleetTelemetry } from '../../../src/telemetry/fleet-telemetry.js';
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
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../support/otlp-receiver.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let receiver: OtlpReceiver;
let ns: FleetNamespace;
const workers: WorkerHandle[] = [];
let producer: { telemetry: FleetTelemetry; client: FleetClient };

const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** A chain agent calls the next one deeper; refused past the depth limit, it answers with what it got. */
function chainModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = String(request.messages[1]?.content ?? '');
  if (!task.startsWith('chain')) return undefined;
  if (turnsIn(request.messages) === 0) return { actions: [{ tool: 'chain', args: { task: `${task}+` } }] };
  return { answer: `${task} got (${toolResults(request).join(' | ')})` };
}

setupOrFail(async () => {
  ns = createNamespace('childotel');
  receiver = await startOtlpReceiver();
  model = await startScriptedModel({ rules: [chainModel] });
  for (let i = 0; i < 2; i++) {
    workers.push(
      startWorker(ns, {
        OPENAI_BASE_URL: model.baseURL,
        FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
        WORKER_CONCURRENCY: '1',
        AGENT_MAX_DEPTH: '2',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
        OTEL_GENAI_CAPTURE_CONTENT: '',
        OTEL_SERVICE_NAME: '',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      }),
    );
  }
  await Promise.all(workers.map((w) => w.waitForOutput(/worker started/, 60_000)));
  producer = await tracedProducer(receiver.url);
});

/** A client whose enqueues are traced to the receiver, so the worker's spans continue the producer's trace. */
async function tracedProducer(endpoint: string): Promise<{ telemetry: FleetTelemetry; client: FleetClient }> {
  // The exporter reads its endpoint from the environment when it is made: set for that moment only.
  const saved = process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = endpoint;
  try {
    const telemetry = (await startTelemetry({ serviceName: 'child-traces-test' }))!;
    const client = new FleetClient({ redisUrl: REDIS_URL, prefix: ns.prefix, telemetry: telemetry.bullmq });
    return { telemetry, client };
  } finally {
    if (saved === undefined) delete process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    else process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = saved;
  }
}

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await producer?.client.close();
  await producer?.telemetry.shutdown();
  await ns?.cleanup();
  await model?.close();
  await receiver?.close();
});

const runsOf = (jobId: string) =>
  receiver.spans.filter(
    (s) => s.name === 'invoke_agent chain' && s.attributes['agent_fleet.job.id'] === jobId,
  );
const callOf = (childJobId: string) =>
  receiver.spans.find(
    (s) => s.name === 'execute_tool chain' && s.attributes['agent_fleet.child.job_id'] === childJobId,
  );

/** The tree's job ids, root first: each run's one child. */
async function treeOf(client: FleetClient, jobId: string): Promise<string[]> {
  const ids = [jobId];
  for (;;) {
    const result = await client.getResult(ids[ids.length - 1]!);
    const child = result?.children?.[0]?.jobId;
    if (!child) return ids;
    ids.push(child);
  }
}

it("a tree enqueued with a trace: one trace, each child's run under its parent's call span, launch to resume", async () => {
  const { jobId } = await producer.client.enqueue({ agent: 'chain', task: 'chain' });
  const result = await producer.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result.status).toBe('succeeded');
  const [root, child, grandchild] = await treeOf(producer.client, jobId);
  expect(grandchild).toBeDefined();
  // Parent and child each run twice (the launch, the resume); the grandchild once.
  await receiver.waitFor(
    () =>
      runsOf(root!).length === 2 &&
      runsOf(child!).length === 2 &&
      runsOf(grandchild!).length === 1 &&
      callOf(child!) !== undefined &&
      callOf(grandchild!) !== undefined,
    20_000,
  );
  const traceIds = new Set([root!, child!, grandchild!].flatMap((id) => runsOf(id).map((s) => s.traceId)));
  expect(traceIds.size).toBe(1);

  for (const [parent, called] of [
    [root!, child!],
    [child!, grandchild!],
  ] as const) {
    const call = callOf(called)!;
    const resumed = runsOf(parent).find((s) => s.attributes['agent_fleet.run.stop_reason'] === 'answer')!;
    const launched = runsOf(parent).find(
      (s) => s.attributes['agent_fleet.run.stop_reason'] === 'awaiting_children',
    )!;
    // The call's span: a child of the resumed run's span, from the launching turn to the resume.
    expect(call.parentSpanId).toBe(resumed.spanId);
    expect(call.traceId).toBe(resumed.traceId);
    expect(call.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'chain',
      'agent_fleet.child.agent': 'chain',
      'agent_fleet.child.status': 'succeeded',
      'agent_fleet.child.stop_reason': 'answer',
    });
    expect(call.startNs).toBeLessThan(launched.endNs);
    expect(call.endNs).toBeGreaterThanOrEqual(resumed.startNs);
    // Every run of the child: a child of that span, within it.
    for (const run of runsOf(called)) {
      expect(run.parentSpanId).toBe(call.spanId);
      expect(run.startNs).toBeGreaterThanOrEqual(call.startNs);
      expect(run.endNs).toBeLessThanOrEqual(call.endNs);
    }
  }
  // The chain from the grandchild's run reaches the root's call span, and the root's run.
  const byId = new Map(receiver.spans.map((s) => [s.spanId, s] as const));
  const ancestors = (span: ReceivedSpan): ReceivedSpan[] => {
    const up: ReceivedSpan[] = [];
    for (let at = byId.get(span.parentSpanId ?? ''); at; at = byId.get(at.parentSpanId ?? '')) up.push(at);
    return up;
  };
  const chain = ancestors(runsOf(grandchild!)[0]!);
  expect(chain.map((s) => s.spanId)).toContain(callOf(child!)!.spanId);
  expect(
    chain.some((s) => s.name === 'invoke_agent chain' && s.attributes['agent_fleet.job.id'] === root),
  ).toBe(true);
  // One span per call, however many workers saw the tree.
  expect(receiver.spans.filter((s) => s.name === 'execute_tool chain')).toHaveLength(2);
});

it("a tree enqueued without a trace: the call's span is recorded at the launch, the tree in the launch's trace", async () => {
  const { jobId } = await ns.client.enqueue({ agent: 'chain', task: 'chain' });
  const result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  expect(result.status).toBe('succeeded');
  const [root, child] = await treeOf(ns.client, jobId);
  await receiver.waitFor(() => runsOf(root!).length === 2 && runsOf(child!).length === 2, 20_000);
  const call = callOf(child!)!;
  const launched = runsOf(root!).find(
    (s) => s.attributes['agent_fleet.run.stop_reason'] === 'awaiting_children',
  )!;
  expect(call.parentSpanId).toBe(launched.spanId);
  expect(call.traceId).toBe(launched.traceId);
  expect(call.attributes['agent_fleet.child.span_ends']).toBe('launch');
  for (const run of runsOf(child!)) {
    expect(run.traceId).toBe(launched.traceId);
    expect(run.parentSpanId).toBe(call.spanId);
  }
});
