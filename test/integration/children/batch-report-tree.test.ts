// A batch whose tasks call agents, reported from the store a real worker wrote (Redis, MariaDB, the scripted
// model): under each task's row, the runs its agent called (a report writer's three analysts; a chain's child and
// grandchild, one level deeper), with agent, status, stop reason and cost, in Markdown, HTML and text; the totals
// count each tree once, as its task (the parent's usage covers its children). Hostile names are escaped.
import { afterAll, expect, it } from 'vitest';
import { buildBatchReport, type BatchRecord } from '../../../src/reports/batch-summary.js';
import { renderHtml } from '../../../src/reports/render-html.js';
import { renderMarkdown } from '../../../src/reports/render-markdown.js';
import { renderText } from '../../../src/reports/render-text.js';
import { BatchReportStore } from '../../../src/reports/report-store.js';
import { formatUsd } from '../../../src/reports/text.js';
import { createStorePool } from '../../../src/store/pool.js';
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
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;

const taskOf = (request: RecordedRequest) => String(request.messages[1]?.content ?? '');
const toolResults = (request: RecordedRequest) =>
  request.messages.filter((m) => m.role === 'tool').map((m) => String(m.content));

/** The report writer asks three analysts at once; a chain agent calls the next one deeper. */
function treeModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = taskOf(request);
  const analyst = /^Input: \{"region":"(\w+)"\}/.exec(task);
  if (analyst) return { answer: `${analyst[1]} sales grew <script>x</script> | pipe` };
  const first = turnsIn(request.messages) === 0;
  if (task.startsWith('report on regions')) {
    if (first)
      return {
        actions: ['EU', 'US', 'APAC'].map((region) => ({ tool: 'region_analyst', args: { region } })),
      };
    return { answer: `report: ${toolResults(request).join(' / ')}` };
  }
  if (!task.startsWith('chain')) return undefined;
  if (first) return { actions: [{ tool: 'chain', args: { task: `${task}+` } }] };
  return { answer: `${task} got (${toolResults(request).join(' | ')})` };
}

setupOrFail(async () => {
  ns = createNamespace('batchtree');
  model = await startScriptedModel({ rules: [treeModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/children.config.ts',
    AGENT_MAX_DEPTH: '2',
  });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  await ns?.cleanup();
  await model?.close();
});

it('lists each task’s tree under its row and counts each tree once', async () => {
  const { batchId, jobIds } = await ns.client.enqueueBatch({
    tasks: [
      { agent: 'report-writer', task: 'report on regions' },
      { agent: 'chain', task: 'chain' },
    ],
  });
  const done = await ns.client.waitForBatch(batchId, { timeoutMs: 90_000 });
  expect(done.summary.succeeded).toBe(2);
  const [writer, chain] = await Promise.all(jobIds.map((id) => ns.client.getResult(id)));
  const chainChild = chain!.children![0]!;
  const grandchild = (await ns.client.getResult(chainChild.jobId))!.children![0]!;

  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  let loaded;
  try {
    loaded = (await new BatchReportStore(pool).loadBatch(batchId))!;
  } finally {
    await pool.end();
  }
  // The store holds every run of the trees under the batch: 2 tasks, 3 analysts, a child and a grandchild.
  expect(loaded.runs).toHaveLength(7);
  const report = buildBatchReport(loaded.batch as BatchRecord, loaded.runs);
  expect(report.warnings).toEqual([]);
  // Each tree once, as its task: the totals are the two tasks' results, children included in them.
  expect(report.summary.tasks).toBe(2);
  expect(report.summary.usage.costUsd).toBeCloseTo(writer!.usage.costUsd + chain!.usage.costUsd, 9);
  expect(report.summary.usage.totalTokens).toBe(writer!.usage.totalTokens + chain!.usage.totalTokens);

  const [writerRow, chainRow] = report.rows;
  expect(writerRow!.called?.rows.map((r) => [r.agent, r.status, r.stopReason, r.depth])).toEqual([
    ['region-analyst', 'succeeded', 'answer', 1],
    ['region-analyst', 'succeeded', 'answer', 1],
    ['region-analyst', 'succeeded', 'answer', 1],
  ]);
  expect(writerRow!.called?.rows.map((r) => r.jobId).sort()).toEqual(
    writer!.children!.map((c) => c.jobId).sort(),
  );
  // Each run's cost is its result's: its own tree's, the grandchild's within the child's.
  expect(chainRow!.called?.rows.map((r) => [r.jobId, r.depth, r.costUsd])).toEqual([
    [chainChild.jobId, 1, expect.closeTo(chainChild.usage.costUsd, 9)],
    [grandchild.jobId, 2, expect.closeTo(grandchild.usage.costUsd, 9)],
  ]);

  // Markdown: the task's row, then its called runs right under it, marked by level; no answer of a child shown.
  const markdown = renderMarkdown(report);
  const lines = markdown.split('\n');
  const chainRowAt = lines.findIndex((line) => line.startsWith(`| 2 | ${chain!.jobId} |`));
  expect(lines[chainRowAt + 1]).toMatch(
    new RegExp(
      `^\\| {2}\\| ↳ ${chainChild.jobId} \\| agent chain \\| succeeded \\| answer \\| (— \\| ){4}\\$`,
    ),
  );
  expect(lines[chainRowAt + 2]).toContain(`| ↳↳ ${grandchild.jobId} | agent chain | succeeded | answer |`);
  const writerRowAt = lines.findIndex((line) => line.startsWith(`| 1 | ${writer!.jobId} |`));
  expect(
    lines.slice(writerRowAt + 1, writerRowAt + 4).every((l) => l.includes('| agent region-analyst |')),
  ).toBe(true);
  expect(markdown).toContain('the totals count each tree once');
  // The tasks table holds no answer of a child (the task's answer quotes them, escaped, as any answer).
  const table = lines.slice(writerRowAt, chainRowAt + 3).join('\n');
  expect(table).not.toContain('<script>');

  const html = renderHtml(report);
  expect(html.match(/<tr class="called">/g)).toHaveLength(5);
  expect(html).toContain(`↳↳ ${grandchild.jobId}</td>`);
  expect(html).toContain(`<td class="num">${formatUsd(chainRow!.called!.rows[1]!.costUsd)}</td>`);
  expect(html).not.toContain('<script>');

  const text = renderText(report);
  expect(text).toMatch(
    new RegExp(`↳↳ ${grandchild.jobId}\\s+succeeded\\s+answer\\s+(-\\s+){4}\\$\\S+\\s+agent chain`),
  );
}, 120_000);
