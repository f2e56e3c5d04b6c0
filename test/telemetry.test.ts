// OpenTelemetry GenAI traces end to end: a real OTLP/HTTP receiver, the producer CLI and a real worker process
// (Redis, MariaDB, the scripted model over HTTP, the SMTP sink). One trace runs from the CLI's enqueue through
// the worker: invoke_agent over chat and execute_tool spans with the GenAI attributes; a failed tool call is an
// error span with its error.type; a model call retried after a 500 is one chat span with its attempts. Content
// is in spans only when asked for, and scrubbed; without an endpoint no exporter module is even loaded.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentResult } from '../src/kernel/types.js';
import { REFERENCE_TASK, referenceModelRules } from '../src/demo/reference-model.js';
import { seedDemoDatabase } from '../src/demo/seed-demo-database.js';
import { startSmtpSink, type SmtpSink } from '../src/demo/smtp-sink.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { freePort } from '../src/demo/free-port.js';
import { telemetrySettings } from '../src/telemetry/fleet-telemetry.js';
import {
  createNamespace,
  killWorker,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from './support/fleet-harness.js';
import { startHttpProcess } from './support/http-process.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';

const ADMIN = 'mysql://root@127.0.0.1:3306';
const suffix = randomBytes(3).toString('hex');
const DATA_DB = `af_test_oteldata_${suffix}`;
const READER = `af_o_${suffix}`;
const RETRY_TASK = 'Say hello (the endpoint fails the first request)';
const FAKE_KEY = 'sk-test0123456789abcdefghijklmn';
const SECRET_TASK = `Say hello; the admin password=hunter2-very-secret and key ${FAKE_KEY}`;
const FAILING_ONCE = new Set([RETRY_TASK]);

let model: ScriptedModelServer;
let receiver: OtlpReceiver;
let ns: FleetNamespace;
let sink: SmtpSink;
let moduleDir: string;
const workers: WorkerHandle[] = [];

beforeAll(async () => {
  await seedDemoDatabase({
    adminUrl: ADMIN,
    database: DATA_DB,
    readerUser: READER,
    readerPassword: 'reader-pw',
  });
  ns = createNamespace('otel');
  sink = await startSmtpSink();
  receiver = await startOtlpReceiver();
  moduleDir = await mkdtemp(join(tmpdir(), 'otel-modules-'));
  const failed = new Set<string>();
  model = await startScriptedModel({
    rules: [
      (request) => {
        const task = String(request.messages[1]?.content ?? '');
        if (FAILING_ONCE.has(task) && !failed.has(task)) {
          failed.add(task);
          return { fault: 'server_error' };
        }
        if (task === RETRY_TASK) return { answer: 'hello', cachedTokens: 24, reasoningTokens: 6 };
        if (task === SECRET_TASK) return { answer: 'hello' };
        return undefined;
      },
      ...referenceModelRules,
    ],
  });
});

afterAll(async () => {
  await Promise.all(workers.map(killWorker));
  await ns.cleanup();
  await sink.close();
  await model.close();
  await receiver.close();
  await rm(moduleDir, { recursive: true, force: true });
  const admin = await mysql.createConnection(ADMIN);
  await admin.query(`DROP DATABASE IF EXISTS \`${DATA_DB}\``);
  await admin.query(`DROP USER IF EXISTS '${READER}'@'%'`);
  await admin.end();
});

/** No OTel variable of the environment running the tests leaks into the processes they start. */
const NO_OTEL: Record<string, string> = {
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  OTEL_GENAI_CAPTURE_CONTENT: '',
  OTEL_SERVICE_NAME: '',
};

function otelEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...NO_OTEL,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=otlp-header-secret',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...extra,
  };
}

function worker(env: Record<string, string>, moduleLog: string): WorkerHandle {
  const handle = startWorker(
    ns,
    {
      OPENAI_BASE_URL: model.baseURL,
      DATA_MYSQL_URL: `mysql://${READER}:reader-pw@127.0.0.1:3306/${DATA_DB}`,
      SMTP_URL: sink.url,
      SMTP_LOOKUP_URL: sink.lookupUrl,
      METRICS_PORT: '0',
      MODULE_LOG: join(moduleDir, moduleLog),
      ...env,
    },
    {
      command: [
        process.execPath,
        '--import',
        'tsx',
        '--import',
        './test/fixtures/record-modules.mjs',
        'workers/agent-worker.ts',
      ],
    },
  );
  workers.push(handle);
  return handle;
}

/** `npm run enqueue -- --task …` as a process; resolves with the job id it printed. */
function enqueueWithCli(task: string, env: Record<string, string>, moduleLog = 'cli.log'): Promise<string> {
  const args = ['--import', 'tsx', '--import', './test/fixtures/record-modules.mjs', 'producers/cli.ts'];
  const child = spawn(process.execPath, [...args, '--task', task], {
    env: {
      ...process.env,
      REDIS_URL,
      QUEUE_PREFIX: ns.prefix,
      LOG_LEVEL: 'warn',
      MODULE_LOG: join(moduleDir, moduleLog),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => {
      const jobId = /"jobId":"([^"]+)"/.exec(out)?.[1];
      if (code === 0 && jobId) resolve(jobId);
      else reject(new Error(`enqueue exited ${code}: ${out}`));
    }),
  );
}

async function modulesLoaded(file: string): Promise<string[]> {
  return (await readFile(join(moduleDir, file), 'utf8')).split('\n').filter(Boolean);
}

const childrenOf = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);

/** The spans of the trace whose invoke_agent span is the job's, once that span (the last to end) is in. */
async function traceOfJob(
  jobId: string,
  producer = 'agent-fleet-enqueue',
): Promise<{ agent: ReceivedSpan; spans: ReceivedSpan[] }> {
  const isAgent = (s: ReceivedSpan) =>
    s.name.startsWith('invoke_agent ') && s.attributes['agent_fleet.job.id'] === jobId;
  await receiver.waitFor((spans) => spans.some(isAgent));
  const agent = receiver.spans.find(isAgent)!;
  // The producer's span is sent when the CLI exits, BullMQ's process span when the job is done: maybe after.
  await receiver.waitFor(
    (spans) =>
      spans.some((s) => s.traceId === agent.traceId && s.service === producer) &&
      spans.some((s) => s.spanId === agent.parentSpanId),
  );
  return { agent, spans: receiver.spans.filter((s) => s.traceId === agent.traceId) };
}

describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let traced: WorkerHandle;

  beforeAll(async () => {
    traced = worker(otelEnv(), 'traced-worker.log');
    await traced.waitForOutput(/worker started/, 40_000);
  });

  it('the reference run: one trace from the CLI enqueue through invoke_agent, chat and execute_tool spans', async () => {
    const jobId = await enqueueWithCli(REFERENCE_TASK, otelEnv());
    const result: AgentResult = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
    expect(result).toMatchObject({ status: 'succeeded', steps: 4, toolCalls: 5 });
    const { agent, spans } = await traceOfJob(jobId);

    // The queue hop: the producer's add span is the ancestor of the worker's process span, the run's parent.
    const [add] = spans.filter((s) => s.service === 'agent-fleet-enqueue' && s.kind === 4);
    // The client enqueues through addBulk, one span for the tasks of one call.
    expect(add?.name).toBe('addBulk agent-tasks');
    const process_ = spans.find((s) => s.spanId === agent.parentSpanId)!;
    expect(process_).toMatchObject({ name: 'process agent-tasks', kind: 5, service: 'agent-fleet-worker' });
    expect(process_.parentSpanId).toBe(add!.spanId);

    expect(agent).toMatchObject({ name: 'invoke_agent default', kind: 1, scope: 'agent-fleet' });
    expect(agent.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'default',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4-turbo-preview',
      'gen_ai.conversation.id': jobId,
      'gen_ai.usage.input_tokens': result.usage.promptTokens,
      'gen_ai.usage.output_tokens': result.usage.completionTokens,
      'agent_fleet.cost_usd': result.usage.costUsd,
      'agent_fleet.run.status': 'succeeded',
      'agent_fleet.run.stop_reason': 'answer',
      'agent_fleet.run.steps': 4,
      'agent_fleet.run.tool_calls': 5,
    });

    const chats = childrenOf(spans, agent).filter((s) => s.name.startsWith('chat'));
    expect(chats).toHaveLength(4);
    chats.sort((a, b) => Number(a.startNs - b.startNs));
    for (const chat of chats) {
      expect(chat).toMatchObject({ name: 'chat gpt-4-turbo-preview', kind: 3, status: { code: 0 } });
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4-turbo-preview',
        'gen_ai.request.temperature': 0.2,
        'gen_ai.request.max_tokens': expect.any(Number),
        'gen_ai.response.model': 'gpt-4-turbo-preview',
        'gen_ai.response.id': expect.stringMatching(/^chatcmpl-scripted-\d+$/),
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'agent_fleet.cost_usd': expect.any(Number),
        'agent_fleet.model.attempts': 1,
        'server.address': '127.0.0.1',
        'server.port': Number(new URL(model.baseURL).port),
      });
      // Off by default: no prompt or reply in any span.
      expect(chat.attributes['gen_ai.input.messages']).toBeUndefined();
      expect(chat.attributes['gen_ai.output.messages']).toBeUndefined();
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons'])).toEqual([
      ['tool_calls'],
      ['tool_calls'],
      ['tool_calls'],
      ['stop'],
    ]);
    const sum = (key: string) => chats.reduce((total, c) => total + Number(c.attributes[key]), 0);
    expect(sum('gen_ai.usage.input_tokens')).toBe(result.usage.promptTokens);
    expect(sum('gen_ai.usage.output_tokens')).toBe(result.usage.completionTokens);
    expect(sum('agent_fleet.cost_usd')).toBeCloseTo(result.usage.costUsd, 9);

    const tools = childrenOf(spans, agent).filter((s) => s.name.startsWith('execute_tool'));
    tools.sort((a, b) => Number(a.startNs - b.startNs));
    expect(tools.map((t) => t.name)).toEqual([
      'execute_tool sql_query',
      'execute_tool sql_query',
      'execute_tool send_email',
      'execute_tool send_email',
      'execute_tool send_email',
    ]);
    for (const tool of tools) {
      expect(tool.kind).toBe(1);
      expect(tool.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': tool.name.slice('execute_tool '.length),
        'gen_ai.tool.call.id': expect.any(String),
        'gen_ai.tool.type': 'function',
        'agent_fleet.tool.duration_ms': expect.any(Number),
      });
      expect(tool.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
      expect(tool.attributes['gen_ai.tool.call.result']).toBeUndefined();
      // Each tool call runs after the model call that asked for it and before the next one.
      expect(tool.startNs).toBeGreaterThanOrEqual(chats[0]!.endNs);
      expect(tool.endNs).toBeLessThanOrEqual(chats[3]!.startNs);
    }
    // The failed tool call: the database refused the first query.
    expect(tools[0]!.status.code).toBe(2);
    expect(tools[0]!.attributes).toMatchObject({
      'error.type': 'sql_error',
      'agent_fleet.tool.outcome': 'error',
    });
    for (const tool of tools.slice(1)) {
      expect(tool.status.code).toBe(0);
      expect(tool.attributes['agent_fleet.tool.outcome']).toBe('ok');
      expect(tool.attributes['error.type']).toBeUndefined();
    }
    expect(new Set(tools.map((t) => t.attributes['gen_ai.tool.call.id'])).size).toBe(5);

    // The exporter's headers reached the receiver and nothing of them was logged.
    const post = receiver.requests.find((r) => r.path === '/v1/traces')!;
    expect(post.headers['x-collector-token']).toBe('otlp-header-secret');
    expect(traced.output()).not.toContain('otlp-header-secret');
    const loaded = await modulesLoaded('traced-worker.log');
    expect(loaded.some((url) => url.includes('@opentelemetry/exporter-trace-otlp-http'))).toBe(true);
  }, 90_000);

  it('a model call retried after a 500 is one chat span with its failed attempt as an event', async () => {
    const jobId = await enqueueWithCli(RETRY_TASK, otelEnv());
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result).toMatchObject({ status: 'succeeded', answer: 'hello' });
    const { agent, spans } = await traceOfJob(jobId);
    const chats = childrenOf(spans, agent).filter((s) => s.name.startsWith('chat'));
    expect(chats).toHaveLength(1);
    const chat = chats[0]!;
    expect(chat.status.code).toBe(0);
    expect(chat.attributes).toMatchObject({
      'agent_fleet.model.attempts': 2,
      'agent_fleet.model.retries': 1,
      'gen_ai.response.finish_reasons': ['stop'],
      // As the endpoint reported them (prompt_tokens_details, completion_tokens_details).
      'gen_ai.usage.cache_read.input_tokens': 24,
      'gen_ai.usage.reasoning.output_tokens': 6,
    });
    expect(agent.attributes).toMatchObject({
      'gen_ai.usage.cache_read.input_tokens': 24,
      'gen_ai.usage.reasoning.output_tokens': 6,
    });
    expect(chat.events).toEqual([
      {
        name: 'agent_fleet.model.attempt_failed',
        attributes: { 'agent_fleet.attempt': 1, 'error.type': 'http_500', 'http.response.status_code': 500 },
      },
    ]);
    expect(agent.attributes['agent_fleet.run.status']).toBe('succeeded');
  }, 60_000);

  it('a task posted to the HTTP API: its enqueue span and the run are one trace', async () => {
    const token = randomBytes(18).toString('base64url');
    const api = await startHttpProcess(
      'producers/api.ts',
      {
        ...otelEnv(),
        API_TOKEN: token,
        API_PORT: '0',
        REDIS_URL,
        QUEUE_PREFIX: ns.prefix,
        MYSQL_URL: ns.mysqlUrl,
      },
      /API listening/,
    );
    try {
      const response = await fetch(`http://127.0.0.1:${api.listening.port}/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ task: RETRY_TASK }),
      });
      expect(response.status).toBe(202);
      const { jobId } = (await response.json()) as { jobId: string };
      await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
      const { agent, spans } = await traceOfJob(jobId, 'agent-fleet-api');
      const add = spans.find((s) => s.service === 'agent-fleet-api' && s.kind === 4)!;
      const process_ = spans.find((s) => s.spanId === agent.parentSpanId)!;
      expect(process_.parentSpanId).toBe(add.spanId);
    } finally {
      await api.stop();
    }
  }, 60_000);

  it('with OTEL_GENAI_CAPTURE_CONTENT=true spans carry the prompt and the reply, scrubbed', async () => {
    await killWorker(traced);
    const capturing = worker(
      otelEnv({ OTEL_GENAI_CAPTURE_CONTENT: 'true', OTEL_SERVICE_NAME: 'fleet-under-test' }),
      'capturing-worker.log',
    );
    await capturing.waitForOutput(/worker started/, 40_000);
    const jobId = await enqueueWithCli(SECRET_TASK, otelEnv());
    await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    const { agent, spans } = await traceOfJob(jobId);
    expect(agent.service).toBe('fleet-under-test');
    const chat = childrenOf(spans, agent).find((s) => s.name.startsWith('chat'))!;
    const input = JSON.parse(String(chat.attributes['gen_ai.input.messages'])) as {
      role: string;
      parts: { type: string; content: string }[];
    }[];
    expect(input[0]).toMatchObject({ role: 'user', parts: [{ type: 'text' }] });
    const asked = input[0]!.parts[0]!.content;
    expect(asked).toContain('Say hello; the admin');
    expect(JSON.parse(String(chat.attributes['gen_ai.system_instructions']))[0].type).toBe('text');
    expect(JSON.parse(String(chat.attributes['gen_ai.output.messages']))).toEqual([
      { role: 'assistant', parts: [{ type: 'text', content: 'hello' }], finish_reason: 'stop' },
    ]);
    // Secrets never: neither the password nor the key of the task is in any span.
    const everything = JSON.stringify(spans.map((s) => s.attributes));
    expect(everything).toContain('[redacted]');
    expect(everything).not.toContain('hunter2-very-secret');
    expect(everything).not.toContain(FAKE_KEY);
    expect(agent.attributes['gen_ai.output.messages']).toBeDefined();
  }, 90_000);
});

describe('an unreachable collector', () => {
  it('slows no run: the job succeeds and the worker warns, without the export headers', async () => {
    for (const w of workers) await killWorker(w);
    const closed = await freePort(0);
    const env = otelEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closed}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
    });
    const w = worker(env, 'unreachable-worker.log');
    await w.waitForOutput(/worker started/, 40_000);
    const started = Date.now();
    const jobId = await enqueueWithCli(RETRY_TASK, env);
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result.status).toBe('succeeded');
    expect(Date.now() - started).toBeLessThan(20_000);
    await w.waitForOutput(new RegExp(`telemetry: connect ECONNREFUSED 127.0.0.1:${closed}`), 20_000);
    expect(w.output()).not.toContain('otlp-header-secret');
    await killWorker(w);
  }, 90_000);
});

describe('without an endpoint', () => {
  it('loads no exporter module and sends nothing, in the worker and in the CLI', async () => {
    for (const w of workers) await killWorker(w);
    const before = receiver.requests.length;
    const plain = worker({ ...NO_OTEL, OTEL_SERVICE_NAME: 'should-not-matter' }, 'plain-worker.log');
    await plain.waitForOutput(/worker started/, 40_000);
    const jobId = await enqueueWithCli(RETRY_TASK, NO_OTEL, 'plain-cli.log');
    const result = await ns.client.waitForResult(jobId, { timeoutMs: 30_000 });
    expect(result.status).toBe('succeeded');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.requests.length).toBe(before);

    const worker_ = await modulesLoaded('plain-worker.log');
    const cli = await modulesLoaded('plain-cli.log');
    // The hook saw their own modules (so an absent module means not loaded, not not recorded).
    expect(worker_.some((url) => url.endsWith('/src/worker/worker-process.ts'))).toBe(true);
    expect(worker_.some((url) => url.endsWith('/src/telemetry/fleet-telemetry.ts'))).toBe(true);
    expect(cli.some((url) => url.endsWith('/src/telemetry/fleet-telemetry.ts'))).toBe(true);
    const loaded = [...worker_, ...cli];
    for (const name of [
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/sdk-trace-base',
      '@opentelemetry/resources',
      'bullmq-otel',
      '/src/telemetry/otel-export.ts',
      '/src/telemetry/genai-tracing.ts',
      // Nor, in production, the demo or the test kit (docs/architecture.md).
      '/src/demo/',
      '/src/testing/',
    ]) {
      expect(loaded.filter((url) => url.includes(name))).toEqual([]);
    }
  }, 90_000);

  it('reads the variables: unset or disabled is off, bad values name the variable', () => {
    expect(telemetrySettings({})).toBeNull();
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBeNull();
    expect(
      telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeNull();
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      captureContent: false,
    });
    expect(
      telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_GENAI_CAPTURE_CONTENT: 'TRUE' }),
    ).toEqual({ captureContent: true });
    expect(() => telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http\(s\) URL/,
    );
    expect(() =>
      telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_GENAI_CAPTURE_CONTENT: 'yes' }),
    ).toThrow(/^OTEL_GENAI_CAPTURE_CONTENT: must be true or false/);
    expect(() =>
      telemetrySettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      }),
    ).toThrow(/^OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported/);
  });
});
