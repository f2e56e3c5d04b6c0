// `npm run enqueue -- --task "…" [options]` (docs/commands.md): validates and enqueues one task, prints
// `{"jobId": …}`. `--batch tasks.jsonl` enqueues a batch, all or nothing, and prints
// `{"batchId", "jobIds"}` (with --wait, the batch summary as the last line); with --forecast it prints the batch's
// forecast and enqueues nothing (docs/batches.md). With --wait it follows progress on stderr and prints the result JSON as the last line of
// stdout. stdout carries only JSON; everything for people goes to stderr.
// Exit codes: 0 enqueued (with --wait: the job succeeded) · 1 failure (Redis down, bad environment, job
// stopped or failed) · 2 bad arguments or bad task, nothing enqueued · 124 --timeout elapsed.
// `--cancel ID` cancels a task (docs/cancelling.md): 0 recorded · 1 it had finished · 2 no such task.
import { env, redisClientOptionsOf } from '../config/env.js';
import { AgentFleetError } from '../src/kernel/errors.js';
import { scrubText } from '../src/logging/redact.js';
import type { AgentResult } from '../src/kernel/types.js';
import {
  CLI_USAGE,
  CliArgsError,
  flagForPath,
  formatProgress,
  parseCliArgs,
  type CliCommand,
} from './cli-args.js';
import { readFile } from 'node:fs/promises';
import type { AgentTask } from '../src/queue/task-schema.js';
import { parseBatchFile } from './batch-file.js';
import { FleetClient, ForecastError, TaskValidationError } from '../src/client/fleet-client.js';
import { StoreResultArchive } from './result-archive.js';
import { forecastDefaultsOf } from '../src/batch/forecast.js';
import { forecastLines, totalText } from '../src/reports/forecast-text.js';
import { startTelemetry } from '../src/telemetry/fleet-telemetry.js';
import { approvalWaitLine } from './approval-wait-line.js';
import { shellCaller } from '../src/util/shell-caller.js';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_TIMEOUT = 124;

const numberFormat = new Intl.NumberFormat('en-US');

function say(text: string): void {
  process.stderr.write(`${scrubText(text.replace(/\s*\n\s*/g, ' '))}\n`);
}

function describeIssues(error: TaskValidationError): string {
  return error.issues
    .map((issue) => {
      const flag = flagForPath(issue.path);
      return `${issue.path || '(task)'}${flag ? ` (${flag})` : ''}: ${issue.message}`;
    })
    .join('; ');
}

function describeResult(result: AgentResult): string {
  const usage = result.usage as Partial<AgentResult['usage']> | undefined;
  const parts = [`job ${result.jobId}: ${result.status} (${result.stopReason})`, `${result.steps} steps`];
  if (typeof usage?.totalTokens === 'number') parts.push(`${numberFormat.format(usage.totalTokens)} tokens`);
  if (typeof usage?.costUsd === 'number') parts.push(`$${usage.costUsd.toFixed(4)}`);
  return parts.join(' · ');
}

/**
 * BullMQ prints connection errors with console.error when a Queue has no 'error' listener, and the client's
 * queues have none, so a Redis outage would bury our one clear line under stack traces. This process writes
 * its own lines with process.stderr.write; console.error is library noise, kept only at LOG_LEVEL=debug.
 */
function quietLibraryConsole(): void {
  if (process.env['LOG_LEVEL'] === 'debug' || process.env['LOG_LEVEL'] === 'trace') return;
  console.error = () => undefined;
}

async function run(argv: readonly string[]): Promise<number> {
  let command: CliCommand;
  try {
    command = parseCliArgs(argv);
  } catch (error) {
    if (!(error instanceof CliArgsError)) throw error;
    say(`error: ${error.message}`);
    say(CLI_USAGE);
    return EXIT_USAGE;
  }
  if (command.mode === 'help') {
    process.stdout.write(`${CLI_USAGE}\n`);
    return EXIT_OK;
  }

  const config = env();
  quietLibraryConsole();
  let batchTasks: AgentTask[] = [];
  if (command.mode === 'batch') {
    let text: string;
    try {
      text = await readFile(command.file, 'utf8');
    } catch (error) {
      say(`error: cannot read ${command.file}: ${error instanceof Error ? error.message : String(error)}`);
      return EXIT_USAGE;
    }
    const parsed = parseBatchFile(text);
    if (!parsed.ok) {
      say(`error: invalid batch file ${command.file}, nothing enqueued:`);
      for (const line of parsed.errors) say(`  ${line}`);
      return EXIT_USAGE;
    }
    batchTasks = parsed.tasks;
  }
  // A batch reads the run history for its forecast (docs/batches.md); a lone task never touches the store.
  const history = command.mode === 'batch' ? new StoreResultArchive(config) : undefined;
  // Each enqueue is a span when an OTLP endpoint is configured; the worker's run continues its trace.
  const telemetry = await startTelemetry({ serviceName: 'agent-fleet-enqueue' });
  const client = new FleetClient({
    ...redisClientOptionsOf(config),
    prefix: config.QUEUE_PREFIX,
    ...(history ? { forecast: { history, defaults: forecastDefaultsOf(config) } } : {}),
    ...(telemetry ? { telemetry: telemetry.bullmq } : {}),
  });
  try {
    if (command.mode === 'batch') return await runBatch(client, command, batchTasks);
    if (command.mode === 'cancel') return await runCancel(client, command);
    if (command.mode === 'list-agents') {
      const catalog = await client.getCatalog();
      if (!catalog) say('no catalog published yet: start a worker (tasks are checked for their shape only)');
      process.stdout.write(`${JSON.stringify(catalog ?? { hash: null, agents: [] }, null, 2)}\n`);
      return EXIT_OK;
    }
    let jobId: string;
    try {
      ({ jobId } = await client.enqueue(command.task));
    } catch (error) {
      if (error instanceof TaskValidationError) {
        say(`error: invalid task, nothing enqueued: ${describeIssues(error)}`);
        return EXIT_USAGE;
      }
      throw error;
    }
    process.stdout.write(`${JSON.stringify({ jobId })}\n`);
    if (!command.wait) return EXIT_OK;
    return await waitForTask(client, jobId, command);
  } finally {
    await client.close();
    await history?.close();
    await telemetry?.shutdown();
  }
}

/** Follows a task to its result (progress on stderr) and prints it as the last line of stdout. */
async function waitForTask(
  client: FleetClient,
  jobId: string,
  command: { timeoutMs: number | undefined },
): Promise<number> {
  let result: AgentResult;
  try {
    result = await client.waitForResult(jobId, {
      ...(command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs }),
      // A parked task says which calls wait and how to decide them, instead of its step line.
      onProgress: (progress) => say(approvalWaitLine(jobId, progress) ?? formatProgress(jobId, progress)),
    });
  } catch (error) {
    if (error instanceof AgentFleetError && error.code === 'wait_timeout') {
      say(`error: job ${jobId} has not finished within --timeout ${(command.timeoutMs ?? 0) / 1000} s`);
      return EXIT_TIMEOUT;
    }
    throw error;
  }
  say(describeResult(result));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  return result.status === 'succeeded' ? EXIT_OK : EXIT_FAILED;
}

/**
 * `--cancel ID`: prints what the cancel did as JSON; exit 0 when it is recorded (with --wait, once the task has
 * ended, cancelled or not), 1 when the task had finished, 2 when there is no such task.
 */
async function runCancel(
  client: FleetClient,
  command: Extract<CliCommand, { mode: 'cancel' }>,
): Promise<number> {
  const { jobId } = command;
  const cancel = await client.cancelTask(jobId, { by: shellCaller() });
  process.stdout.write(`${JSON.stringify({ jobId, ...cancel })}\n`);
  if (cancel.outcome === 'unknown') {
    say(`error: no task ${jobId}`);
    return EXIT_USAGE;
  }
  if (cancel.outcome === 'finished') {
    say(`job ${jobId} has finished (its result is out): nothing cancelled`);
    return EXIT_FAILED;
  }
  const children = cancel.children > 0 ? ` and ${cancel.children} child agents` : '';
  say(`job ${jobId} (${cancel.state})${children}: cancelled, ending as cancelled`);
  if (!command.wait) return EXIT_OK;
  const code = await waitForTask(client, jobId, command);
  return code === EXIT_TIMEOUT ? code : EXIT_OK;
}

async function runBatch(
  client: FleetClient,
  command: Extract<CliCommand, { mode: 'batch' }>,
  tasks: AgentTask[],
): Promise<number> {
  const budget = Object.keys(command.budget).length > 0 ? command.budget : undefined;
  const input = {
    tasks,
    ...(budget ? { budget } : {}),
    ...(command.name ? { name: command.name } : {}),
  };
  const options = {
    ...(command.maxCostFromForecast ? { maxCostFromForecast: command.maxCostFromForecast } : {}),
    ...(command.ifNoHistory ? { ifNoHistory: command.ifNoHistory } : {}),
  };
  let batch;
  try {
    if (command.forecast) {
      const forecast = await client.forecastBatch(input, options);
      for (const line of forecastLines(forecast)) say(line);
      process.stdout.write(`${JSON.stringify({ forecast })}\n`);
      return EXIT_OK;
    }
    batch = await client.enqueueBatch(input, undefined, options);
  } catch (error) {
    if (error instanceof TaskValidationError) {
      say(
        `error: invalid batch, nothing enqueued: ${error.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      );
      return EXIT_USAGE;
    }
    if (error instanceof ForecastError) {
      say(`error: ${error.message}; nothing enqueued`);
      return EXIT_USAGE;
    }
    throw error;
  }
  if (batch.forecast) {
    if (batch.forecast.budgetFromForecast && batch.forecast.batchBudget?.maxCostUsd !== undefined) {
      say(
        `batch budget set from the forecast's ${batch.forecast.budgetFromForecast.quantile}: $${batch.forecast.batchBudget.maxCostUsd}`,
      );
    }
    say(`forecast: ${totalText(batch.forecast)}`);
  } else if (batch.forecastError) {
    say(`note: enqueued without a forecast (the run history could not be read: ${batch.forecastError})`);
  }
  process.stdout.write(`${JSON.stringify({ batchId: batch.batchId, jobIds: batch.jobIds })}\n`);
  if (!command.wait) return EXIT_OK;
  let status;
  try {
    status = await client.waitForBatch(batch.batchId, {
      ...(command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs }),
      onProgress: (s) =>
        say(
          `batch ${s.batchId}: ${s.succeeded + s.stopped + s.failed}/${s.tasks} done · ${s.succeeded} succeeded, ` +
            `${s.stopped} stopped, ${s.failed} failed · ${numberFormat.format(s.usage.totalTokens)} tokens · $${s.usage.costUsd.toFixed(4)}`,
        ),
    });
  } catch (error) {
    if (error instanceof AgentFleetError && error.code === 'wait_timeout') {
      say(
        `error: batch ${batch.batchId} has not finished within --timeout ${(command.timeoutMs ?? 0) / 1000} s`,
      );
      return EXIT_TIMEOUT;
    }
    throw error;
  }
  process.stdout.write(`${JSON.stringify(status.summary)}\n`);
  return status.state === 'completed' && status.summary.failed === 0 ? EXIT_OK : EXIT_FAILED;
}

async function main(): Promise<void> {
  let code: number;
  try {
    code = await run(process.argv.slice(2));
  } catch (error) {
    // ConfigError (bad environment, Redis unreachable: the message names the variable) and anything else:
    // one line, no stack.
    say(`error: ${error instanceof Error ? error.message : String(error)}`);
    code = EXIT_FAILED;
  }
  // Flush stdout before exiting: ioredis reconnect timers must not keep a finished CLI alive.
  process.stdout.write('', () => process.exit(code));
}

await main();
