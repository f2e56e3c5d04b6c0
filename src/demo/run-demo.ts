// `npm run demo`: the whole pipeline on one machine, offline. It migrates the store, seeds the demo sales
// database with its read-only account, starts an SMTP sink that keeps every message, two worker processes,
// the HTTP API and Bull Board; then enqueues the reference task (through the API) and a small batch of report
// tasks (through the client library), shows their progress, and prints what they did and cost.
// Without OPENAI_API_KEY the model is the scripted one, playing the reference trajectory; it says so.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv, redactUrl, redisClientOptionsOf } from '../../config/env.js';
import { FleetClient } from '../client/fleet-client.js';
import type { AgentResult } from '../kernel/types.js';
import { scrubText } from '../logging/redact.js';
import { startTelemetry, type FleetTelemetry } from '../telemetry/fleet-telemetry.js';
import { migrate } from '../store/migrate.js';
import { createStorePool } from '../store/pool.js';
import { startScriptedModel, type ScriptedModelServer } from '../testing/scripted-model-server.js';
import { configuredPrices, priceOf } from '../llm/price-table.js';
import { startFleetProcess, type FleetProcess } from './child-process.js';
import { emailsTable, resultsTable, type DemoTaskRow } from './demo-table.js';
import { demoModelShape } from './demo-model-shape.js';
import { freePort } from './free-port.js';
import { REFERENCE_TASK, REPORT_TASKS, referenceModelRules } from './reference-model.js';
import { seedDemoDatabase } from './seed-demo-database.js';
import { startSmtpSink, type SmtpSink } from './smtp-sink.js';

const say = (line = '') => process.stdout.write(`${line}\n`);
const ARTICLE = { calls: 6, promptTokens: 12_300, completionTokens: 1_780 };

export async function runDemo(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const exitWhenDone = argv.includes('--exit') || !process.stdout.isTTY;
  const config = parseEnv();
  const logDir = join('reports', 'demo-logs');
  mkdirSync(logDir, { recursive: true });
  const processes: FleetProcess[] = [];
  let model: ScriptedModelServer | undefined;
  let sink: SmtpSink | undefined;
  let client: FleetClient | undefined;
  let telemetry: FleetTelemetry | undefined;

  const shutdown = async () => {
    await Promise.allSettled(processes.map((p) => p.stop()));
    await Promise.allSettled([model?.close(), sink?.close(), client?.close()]);
    await telemetry?.shutdown();
  };
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    say('\nStopping the demo…');
    void shutdown().then(() => process.exit(0));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    say('agent-fleet demo');
    say('================');
    // 1. The store and the data the SQL tools read.
    const pool = await createStorePool(config.MYSQL_URL);
    await migrate(pool);
    await pool.end();
    say(`store      ${redactUrl(config.MYSQL_URL)} (migrated)`);
    const seeded = await seedDemoDatabase({ adminUrl: config.MYSQL_URL });
    say(
      `sales data ${seeded.database}: ${seeded.rows.customers} customers, ${seeded.rows.orders} orders (read-only account agent_reader)`,
    );

    // 2. The mail sink and the model.
    sink = await startSmtpSink({ port: await freePort(1025) });
    const smtpUrl = process.env['SMTP_URL'] ? config.SMTP_URL! : sink.url;
    say(
      `email      ${smtpUrl}${process.env['SMTP_URL'] ? '' : ' (embedded sink: every message is kept, none leaves this machine)'}`,
    );
    const modelEnv: Record<string, string> = {};
    if (config.OPENAI_API_KEY) {
      say(
        `model      ${config.LLM_MODEL} at ${config.OPENAI_BASE_URL ?? 'OpenAI'} (OPENAI_API_KEY is set: real calls, real cost)`,
      );
    } else {
      // Shaped as the configured model is, as OpenAI's Chat Completions answers it (demo-model-shape.ts).
      const price = priceOf(config.LLM_MODEL, configuredPrices(config));
      model = await startScriptedModel({ rules: referenceModelRules, ...demoModelShape(price) });
      modelEnv['OPENAI_BASE_URL'] = model.baseURL;
      modelEnv['OPENAI_API_KEY'] = 'scripted-demo';
      say(
        'model      SCRIPTED: no OPENAI_API_KEY, so a local scripted model plays the reference trajectory.',
      );
      say(
        `           It answers over HTTP like OpenAI would and reports usage with the real tokenizer, priced as ${config.LLM_MODEL}.`,
      );
    }

    // 3. The fleet: two workers, the API and the board, as separate processes.
    const apiPort = await freePort(config.API_PORT);
    const boardPort = await freePort(config.BOARD_PORT);
    const apiToken = config.API_TOKEN ?? randomBytes(18).toString('base64url');
    const boardUser = config.BOARD_USER ?? 'admin';
    const boardPassword = config.BOARD_PASSWORD ?? randomBytes(9).toString('base64url');
    const fleetEnv: NodeJS.ProcessEnv = {
      ...process.env,
      ...modelEnv,
      SMTP_URL: smtpUrl,
      ...(process.env['SMTP_URL'] ? {} : { SMTP_LOOKUP_URL: sink.lookupUrl }),
      API_PORT: String(apiPort),
      API_TOKEN: apiToken,
      BOARD_PORT: String(boardPort),
      BOARD_USER: boardUser,
      BOARD_PASSWORD: boardPassword,
      LOG_LEVEL: process.env['LOG_LEVEL'] ?? 'info',
      NODE_ENV: 'production',
    };
    for (const name of ['worker-1', 'worker-2']) {
      processes.push(
        startFleetProcess(name, 'workers/agent-worker.ts', fleetEnv, join(logDir, `${name}.log`)),
      );
    }
    processes.push(startFleetProcess('api', 'producers/api.ts', fleetEnv, join(logDir, 'api.log')));
    processes.push(startFleetProcess('board', 'producers/board.ts', fleetEnv, join(logDir, 'board.log')));
    // Both workers start with the same METRICS_PORT: each takes the next free port (METRICS_PORT_SPAN).
    const metricsUrl = (p: FleetProcess) =>
      config.METRICS_PORT > 0 ? p.waitFor(/metrics on (http:\/\/[^\s"]+)/).then((m) => m[1]!) : null;
    const [metricsUrls] = await Promise.all([
      Promise.all([metricsUrl(processes[0]!), metricsUrl(processes[1]!)]),
      processes[0]!.waitFor(/worker started/),
      processes[1]!.waitFor(/worker started/),
      processes[2]!.waitFor(/API listening/),
      processes[3]!.waitFor(/board listening/),
    ]);
    say(
      `fleet      2 workers (concurrency ${config.WORKER_CONCURRENCY} each), API on :${apiPort}, board on :${boardPort}; logs in ${logDir}/`,
    );
    if (config.METRICS_PORT > 0) say(`metrics    ${metricsUrls.join('  ')} (one per worker)`);
    const otlp =
      process.env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    if (otlp) say(`traces     OpenTelemetry GenAI spans to ${redactUrl(otlp)} (docs/telemetry.md)`);
    say();

    // 4. The work: the reference task through the HTTP API, the report batch through the library.
    // With OTEL_EXPORTER_OTLP_ENDPOINT set, the batch's enqueue starts its tasks' traces (docs/telemetry.md).
    telemetry = await startTelemetry({ serviceName: 'agent-fleet-demo' });
    client = new FleetClient({
      ...redisClientOptionsOf(config),
      prefix: config.QUEUE_PREFIX,
      ...(telemetry ? { telemetry: telemetry.bullmq } : {}),
    });
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const posted = await fetch(`${apiUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ task: REFERENCE_TASK, metadata: { demo: 'reference' } }),
    });
    if (posted.status !== 202)
      throw new Error(`the API refused the reference task: ${posted.status} ${await posted.text()}`);
    const { jobId: referenceId } = (await posted.json()) as { jobId: string };
    // The reports run as one batch with a budget of its own, as an overnight batch would.
    const reports = await client.enqueueBatch({
      name: 'demo reports',
      budget: { maxCostUsd: 0.1 },
      tasks: REPORT_TASKS.map(({ task }) => ({
        task,
        tools: ['sql_query', 'list_tables', 'describe_table'],
      })),
    });
    const batch = reports.batchId;
    const rows: DemoTaskRow[] = [
      { label: '[ref]', task: REFERENCE_TASK, result: null },
      ...REPORT_TASKS.map(({ task }, i) => ({ label: `[r${i + 1}] `, task, result: null })),
    ];
    const ids = [referenceId, ...reports.jobIds];
    say(
      `enqueued   ${ids.length} tasks: the reference task (job ${referenceId}, via POST /v1/tasks) and ${reports.jobIds.length} report tasks (batch ${batch}, budget $0.10)`,
    );
    await Promise.all(
      ids.map(async (jobId, i) => {
        const row = rows[i]!;
        row.result = await client!.waitForResult(jobId, {
          timeoutMs: 10 * 60_000,
          onProgress: (p) => {
            const progress = p as {
              step?: number;
              maxSteps?: number;
              totalTokens?: number;
              costUsd?: number;
            } | null;
            if (progress?.step) {
              say(
                `  ${row.label} step ${progress.step}/${progress.maxSteps} · ${progress.totalTokens?.toLocaleString('en-US')} tokens · $${progress.costUsd?.toFixed(4)}`,
              );
            }
          },
        });
        say(`  ${row.label} ${row.result.status} (${row.result.stopReason}) in ${row.result.steps} steps`);
      }),
    );

    // 5. What happened.
    say();
    say(resultsTable(rows));
    say();
    const reference = rows[0]!.result!;
    say('The reference task');
    say(`  answer: ${reference.answer ?? '(none)'}`);
    say(referenceCost(reference, model, referenceId));
    say();
    const summary = (await client.waitForBatch(batch, { timeoutMs: 60_000 })).summary;
    say(
      `The report batch ${batch}: ${summary.succeeded}/${summary.tasks} succeeded, ` +
        `${summary.usage.totalTokens.toLocaleString('en-US')} tokens, $${summary.usage.costUsd.toFixed(4)} ` +
        `(npm run report -- --batch ${batch} writes it as Markdown and HTML under reports/)`,
    );
    say();
    say(`Emails captured by the sink (${sink.messages.length}):`);
    say(emailsTable(sink.messages));
    say();
    say(
      `Bull Board  http://127.0.0.1:${boardPort}/   user ${boardUser}, password ${boardPassword} (read-only)`,
    );
    say(
      `Run console http://127.0.0.1:${boardPort}/console/runs   the same login; in a terminal: npm run trace -- --job ID`,
    );
    say(`HTTP API    ${apiUrl}/v1/tasks   Authorization: Bearer ${apiToken}`);
    say(
      `Results are on the agent-results queue and in MySQL (agent_runs, agent_steps); traces per step in the board's job logs.`,
    );
    if (!exitWhenDone) {
      say();
      say('The fleet keeps running so you can look around. Press Ctrl-C to stop everything.');
      await new Promise<void>(() => undefined);
    }
    await shutdown();
    return rows.every((row) => row.result && row.result.status !== 'failed') ? 0 : 1;
  } catch (error) {
    process.stderr.write(
      `demo failed: ${scrubText(error instanceof Error ? error.message : String(error))}\n`,
    );
    await shutdown();
    return 1;
  }
}

/** The reference task against the original article's figures. */
function referenceCost(result: AgentResult, model: ScriptedModelServer | undefined, jobId: string): string {
  const calls = model
    ? model.requests.filter((r) => r.messages[1]?.content === REFERENCE_TASK).length
    : result.steps;
  const u = result.usage;
  return (
    `  ${calls} model calls, ${u.promptTokens.toLocaleString('en-US')} prompt + ${u.completionTokens.toLocaleString('en-US')} completion tokens, $${u.costUsd.toFixed(4)} (job ${jobId})\n` +
    `  the original article: ${ARTICLE.calls} calls, ${ARTICLE.promptTokens.toLocaleString('en-US')} + ${ARTICLE.completionTokens.toLocaleString('en-US')} tokens`
  );
}
