// The baseline of the real-tools scenario in a process of its own: a bare loop on the `openai` package making
// the worker's model calls (the request bodies the scripted server recorded, replayed job by job, in order) and,
// after each reply, the tool calls that reply asks for, through the same drivers the tools use: mysql2 (a pool,
// the statement the tool sends: the information_schema query of list_tables, the model's SQL with MariaDB's
// statement limits) and nodemailer (a transport made once with its defaults: one SMTP connection per message;
// or with BENCH_SMTP_POOL=1, `pool: true` as a script that sends mail in a loop would make it: kept connections,
// 5 at most). No queue, no store, no kernel, no guard, no ledger. Spawned with an IPC channel by
// bench/scenarios/real-tools.ts:
//   env BENCH_MODEL_URL, BENCH_DATA_URL (the read-only account), BENCH_SMTP_URL, BENCH_SMTP_POOL
//   → { type: 'ready' }
//   ← { type: 'load', jobs }            → { type: 'loaded' }
//   ← { type: 'replay', concurrency }   → { type: 'replayed', elapsedMs, cpuMs, calls, toolCalls, errors }
import { createPool } from 'mysql2/promise';
import nodemailer from 'nodemailer';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';

type Body = Record<string, unknown>;

const baseURL = process.env.BENCH_MODEL_URL;
const dataUrl = process.env.BENCH_DATA_URL;
const smtpUrl = process.env.BENCH_SMTP_URL;
if (!baseURL || !dataUrl || !smtpUrl || !process.send) {
  process.stderr.write('real-tools-floor: needs BENCH_MODEL_URL, BENCH_DATA_URL, BENCH_SMTP_URL and IPC\n');
  process.exit(2);
}
const openai = new OpenAI({ baseURL, apiKey: 'bench-key', maxRetries: 0 });
const database = new URL(dataUrl).pathname.slice(1);
const pool = createPool({ uri: dataUrl, connectionLimit: 10, charset: 'UTF8MB4_UNICODE_CI', timezone: 'Z' });
const transport =
  process.env.BENCH_SMTP_POOL === '1'
    ? nodemailer.createTransport({ url: smtpUrl, pool: true })
    : nodemailer.createTransport(smtpUrl);
let jobs: Body[][] = [];
let toolCalls = 0;

async function listTables(): Promise<void> {
  const [tables] = await pool.query(
    'SELECT TABLE_NAME AS name, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY CAST(TABLE_NAME AS BINARY) LIMIT ?',
    [database, 201],
  );
  const names = (tables as { name: string }[]).map((row) => row.name);
  await pool.query(
    'SELECT t, c FROM (SELECT TABLE_NAME AS t, COLUMN_NAME AS c, ROW_NUMBER() OVER (PARTITION BY TABLE_NAME ORDER BY ORDINAL_POSITION) AS n FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?)) AS numbered WHERE n <= ? ORDER BY t, n',
    [database, names, 41],
  );
}

async function tool(name: string, args: Record<string, unknown>): Promise<void> {
  toolCalls++;
  if (name === 'list_tables') return listTables();
  if (name === 'sql_query') {
    await pool
      .query(`SET STATEMENT max_statement_time=5.000, sql_select_limit=11 FOR ${String(args.sql)}`)
      .catch(() => undefined); // the first query fails on purpose
    return;
  }
  if (name === 'send_email') {
    await transport.sendMail({
      from: 'reports@agent-fleet.local',
      to: String(args.to),
      subject: String(args.subject),
      text: String(args.body),
    });
    return;
  }
  throw new Error(`real-tools-floor: unknown tool ${name}`);
}

/** One job: each recorded call, then the tools its reply asks for (in parallel, as the worker runs them). */
async function job(calls: Body[]): Promise<number> {
  let errors = 0;
  for (const body of calls) {
    try {
      const reply = await openai.chat.completions.create(
        body as unknown as ChatCompletionCreateParamsNonStreaming,
      );
      const requested = reply.choices[0]?.message.tool_calls ?? [];
      await Promise.all(
        requested.map((call) =>
          call.type === 'function'
            ? tool(call.function.name, JSON.parse(call.function.arguments) as Record<string, unknown>)
            : undefined,
        ),
      );
    } catch {
      errors++;
    }
  }
  return errors;
}

process.on('message', (command: { type: string; jobs?: Body[][]; concurrency?: number }) => {
  if (command.type === 'load') {
    jobs = command.jobs ?? [];
    process.send?.({ type: 'loaded' });
    return;
  }
  void (async () => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    toolCalls = 0;
    let next = 0;
    let errors = 0;
    const lane = async () => {
      while (next < jobs.length) errors += await job(jobs[next++]!);
    };
    await Promise.all(Array.from({ length: command.concurrency ?? 1 }, lane));
    const elapsedMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    process.send?.({
      type: 'replayed',
      elapsedMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      calls: jobs.reduce((sum, calls) => sum + calls.length, 0),
      toolCalls,
      errors,
    });
  })();
});
process.on('disconnect', () => {
  transport.close();
  void pool.end().finally(() => process.exit(0));
});
process.send({ type: 'ready' });
