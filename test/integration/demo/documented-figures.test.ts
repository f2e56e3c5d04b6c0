// The figures the docs quote for the reference task are the run's own: README.md's tokens and costs, and the
// example of `npm run trace` in docs/console.md, checked against the reference task run as `npm run demo` runs
// it (the demo's scripted model, shaped as the default model, on the demo's sales data). A change of prompt,
// tokenizer, price or model that moves a figure fails here, naming the figure the docs should now say.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTraceCommand } from '../../../src/console/trace-command.js';
import { demoModelShape } from '../../../src/demo/demo-model-shape.js';
import { REFERENCE_TASK, referenceModelRules } from '../../../src/demo/reference-model.js';
import { seedDemoDatabase } from '../../../src/demo/seed-demo-database.js';
import { startSmtpSink, type SmtpSink } from '../../../src/demo/smtp-sink.js';
import { DEFAULT_MODEL } from '../../../src/kernel/defaults.js';
import type { AgentResult } from '../../../src/kernel/types.js';
import { priceOf } from '../../../src/llm/price-table.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';
import {
  createNamespace,
  killWorker,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { REPO_ROOT } from '../../support/repo-paths.js';

const ADMIN = 'mysql://root@127.0.0.1:3306';
const suffix = randomBytes(3).toString('hex');
const DATA_DB = `af_test_docfig_${suffix}`;
const READER = `af_d_${suffix}`;
/** The seed's model, whose prices the README also quotes the run at. */
const SEED_MODEL = 'gpt-4-turbo-preview';

let ns: FleetNamespace;
let sink: SmtpSink;
let model: ScriptedModelServer;
let worker: WorkerHandle;
let result: AgentResult;
let trace = '';

const read = (page: string) => readFileSync(join(REPO_ROOT, page), 'utf8');
/** As the demo prints counts: 2,707. */
const count = (n: number) => n.toLocaleString('en-US');

beforeAll(async () => {
  await seedDemoDatabase({
    adminUrl: ADMIN,
    database: DATA_DB,
    readerUser: READER,
    readerPassword: 'reader-pw',
  });
  ns = createNamespace('docfigures');
  sink = await startSmtpSink();
  model = await startScriptedModel({ rules: referenceModelRules, ...demoModelShape(priceOf(DEFAULT_MODEL)) });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    DATA_MYSQL_URL: `mysql://${READER}:reader-pw@127.0.0.1:3306/${DATA_DB}`,
    // Blank is unset: the default model, as `npm run demo` runs without LLM_MODEL.
    LLM_MODEL: '',
    SMTP_URL: sink.url,
    SMTP_LOOKUP_URL: sink.lookupUrl,
  });
  await worker.waitForOutput(/worker started/);
  const { jobId } = await ns.client.enqueue({ task: REFERENCE_TASK, metadata: { demo: 'reference' } });
  result = await ns.client.waitForResult(jobId, { timeoutMs: 60_000 });
  await runTraceCommand(['--job', jobId], () => ns.mysqlUrl, {
    stdout: (text) => (trace += text),
    stderr: (text) => (trace += text),
  });
}, 120_000);

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await sink?.close();
  await model?.close();
  const admin = await mysql.createConnection(ADMIN);
  await admin.query(`DROP DATABASE IF EXISTS \`${DATA_DB}\``);
  await admin.query(`DROP USER IF EXISTS '${READER}'@'%'`);
  await admin.end();
});

describe("the reference task's figures in the docs", () => {
  it("README.md: the model calls, tokens and cost at the default model's prices and at the seed's", () => {
    expect(result).toMatchObject({ status: 'succeeded', steps: 4, toolCalls: 5 });
    const { promptTokens, completionTokens, costUsd } = result.usage;
    const seed = priceOf(SEED_MODEL);
    const atSeedPrices =
      (promptTokens * seed.inputPerMillion + completionTokens * seed.outputPerMillion) / 1e6;
    const calls = model.requests.filter((request) => request.messages[1]?.content === REFERENCE_TASK).length;
    const expected =
      `The reference task takes ${calls} model calls (a query the database refuses, the corrected query, three ` +
      `emails as parallel calls, the answer): ${count(promptTokens)} prompt and ${count(completionTokens)} ` +
      `completion tokens, $${costUsd.toFixed(4)} at the prices of the default model, ${DEFAULT_MODEL}, ` +
      `${fractionOfBudget(costUsd)} of the default $0.05 budget ($${atSeedPrices.toFixed(4)} at the seed's ` +
      `${SEED_MODEL} prices).`;
    expect(oneLine(read('README.md'))).toContain(expected);
  });

  it("docs/models.md: each model's prices and what the reference task's tokens cost at them", () => {
    const { promptTokens, completionTokens } = result.usage;
    const table = read('docs/models.md');
    expect(oneLine(table)).toContain(
      `(4 calls, ${count(promptTokens)} prompt and ${count(completionTokens)} completion tokens, measured with \`npm run demo\``,
    );
    const rows = [
      ...table.matchAll(
        /^\| \**([\w.-]+)\** *\| +([\d.]+) \| +([\d.—]+) \| +([\d.]+) \| [\d,]+ +\| +\**\$([\d.]+)\** \| +\**(\d+)%\** \|$/gm,
      ),
    ];
    expect(rows.map((row) => row[1])).toContain(DEFAULT_MODEL);
    for (const [, name, input, cached, output, cost, share] of rows) {
      const price = priceOf(name!);
      const usd = (promptTokens * price.inputPerMillion + completionTokens * price.outputPerMillion) / 1e6;
      expect([
        name,
        Number(input),
        cached === '—' ? undefined : Number(cached),
        Number(output),
        cost,
        Number(share),
      ]).toEqual([
        name,
        price.inputPerMillion,
        price.cachedInputPerMillion,
        price.outputPerMillion,
        usd.toFixed(4),
        Math.round((usd / 0.05) * 100),
      ]);
    }
  });

  it("docs/console.md: the example of npm run trace is the reference run's trace", () => {
    const page = read('docs/console.md');
    const block = /```\n(run \d+ · agent default[\s\S]*?)\n```/.exec(page)?.[1];
    expect(block, 'the trace example in docs/console.md').toBeDefined();
    const shown = block!.split('\n').filter((line) => !['', '…'].includes(line.trim()));
    const actual = trace.split('\n').map(comparable);
    // Every line the page shows is a line of the real trace, in the same order; what varies from run to run (the
    // job id, the times) is left out of the comparison.
    let at = 0;
    for (const line of shown) {
      const found = actual.indexOf(comparable(line), at);
      expect(
        found,
        `docs/console.md shows\n${line}\nwhich the trace does not print; the trace:\n${trace}`,
      ).toBeGreaterThanOrEqual(at);
      at = found + 1;
    }
  });
});

/** "a twelfth": the README says the share of the $0.05 budget in words, to the nearest simple fraction. */
function fractionOfBudget(costUsd: number): string {
  const words: Record<number, string> = {
    2: 'a half',
    3: 'a third',
    4: 'a quarter',
    5: 'a fifth',
    6: 'a sixth',
    8: 'an eighth',
    10: 'a tenth',
    12: 'a twelfth',
    15: 'a fifteenth',
    20: 'a twentieth',
  };
  const denominator = Math.round(0.05 / costUsd);
  return words[denominator] ?? `1/${denominator}`;
}

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ');

/** A trace line without what differs between runs: the job id, when it started, how long it and each step took. */
function comparable(line: string): string {
  // A duration as formatDuration writes it: `202 ms`, `1.2 s` (a loaded machine's first call), `1 min 5 s`.
  const duration = String.raw`(?:\d+ min )?[\d.]+ m?s`;
  return line
    .replace(/^run \S+ ·/, 'run N ·')
    .replace(new RegExp(` · started \\S+ · took ${duration}`), '')
    .replace(new RegExp(` · ${duration}$`), '')
    .trimEnd();
}
