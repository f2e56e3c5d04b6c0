// `npm run example:kpi`: the kpi-digest example end to end on one machine, offline. It starts the team's KPI
// service, an SMTP sink, the scripted model and one worker serving this folder's fleet configuration; then
// enqueues the week's digests as a batch (enqueue-batch.ts, through the client only), prints them and the
// emails sent, and stops everything. Needs Redis and MariaDB, like `npm run demo`.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseEnv } from '../../config/env.js';
import { startFleetProcess, type FleetProcess } from '../../src/demo/child-process.js';
import { startSmtpSink, type CapturedMessage, type SmtpSink } from '../../src/demo/smtp-sink.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
} from '../../src/testing/scripted-model-server.js';
import { enqueueDigests, printDigests, type DigestBatch } from './enqueue-batch.js';
import { kpiModelRules } from './kpi-model.js';
import { startKpiService, type KpiService } from './kpi-service.js';

export interface KpiExampleOptions {
  redisUrl?: string;
  mysqlUrl?: string;
  /** Default kpi-example: the example's queues stay apart from the demo's. */
  prefix?: string;
  week?: string;
  logDir?: string;
}

export interface KpiExampleRun {
  batch: DigestBatch;
  emails: CapturedMessage[];
  /** What the worker asked the model, call by call. */
  modelRequests: RecordedRequest[];
  /** How many requests the KPI service answered. */
  kpiRequests: number;
}

const CONFIG = fileURLToPath(new URL('./agent-fleet.config.ts', import.meta.url));

export async function runKpiExample(options: KpiExampleOptions = {}): Promise<KpiExampleRun> {
  const env = parseEnv();
  const redisUrl = options.redisUrl ?? env.REDIS_URL;
  const prefix = options.prefix ?? 'kpi-example';
  const logDir = options.logDir ?? join('reports', 'kpi-digest-logs');
  mkdirSync(logDir, { recursive: true });
  let service: KpiService | undefined;
  let sink: SmtpSink | undefined;
  let model: ScriptedModelServer | undefined;
  let worker: FleetProcess | undefined;
  try {
    service = await startKpiService();
    sink = await startSmtpSink();
    model = await startScriptedModel({ rules: kpiModelRules });
    worker = startFleetProcess(
      'worker',
      'workers/agent-worker.ts',
      {
        ...process.env,
        FLEET_CONFIG: CONFIG,
        REDIS_URL: redisUrl,
        MYSQL_URL: options.mysqlUrl ?? env.MYSQL_URL,
        QUEUE_PREFIX: prefix,
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_API_KEY: 'scripted-example',
        SMTP_URL: sink.url,
        SMTP_LOOKUP_URL: sink.lookupUrl,
        KPI_SERVICE_URL: service.url,
        METRICS_PORT: '0',
        LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info',
        NODE_ENV: 'production',
      },
      join(logDir, 'worker.log'),
    );
    await worker.waitFor(/worker started/, 60_000);
    const batch = await enqueueDigests({ redisUrl, prefix, week: options.week ?? '2026-W48' });
    return {
      batch,
      emails: [...sink.messages],
      modelRequests: [...model.requests],
      kpiRequests: service.served,
    };
  } finally {
    await worker?.stop();
    await Promise.allSettled([service?.close(), sink?.close(), model?.close()]);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const run = await runKpiExample();
    printDigests(run.batch);
    console.log(`\nemails captured by the sink (${run.emails.length}):`);
    for (const email of run.emails) console.log(`  to ${email.to.join(', ')}: ${email.subject}`);
    const { succeeded, tasks } = run.batch.summary;
    process.exitCode = succeeded === tasks && run.emails.length === tasks ? 0 : 1;
  } catch (error) {
    console.error(`example failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
}
