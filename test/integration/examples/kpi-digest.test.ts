// The kpi-digest example end to end, as `npm run example:kpi` runs it: its KPI service, its MCP server over
// stdio, the SMTP sink, the scripted model over HTTP and a real worker process serving the example's fleet
// configuration; the batch enqueued through the client only.
import { observationsIn } from '../../../src/testing/transcript.js';
import { afterAll, describe, expect, it } from 'vitest';
import { Digest, recipientOf } from '../../../examples/kpi-digest/agent-fleet.config.js';
import {
  kpisFor,
  percentOfTarget,
  REGIONS,
  targetsFor,
  type Region,
} from '../../../examples/kpi-digest/kpi-data.js';
import { runKpiExample, type KpiExampleRun } from '../../../examples/kpi-digest/run.js';
import { createNamespace, queryStore, REDIS_URL } from '../../support/fleet-harness.js';

const WEEK = '2026-W48';
const ns = createNamespace('kpi');
afterAll(() => ns.cleanup());

describe('the kpi-digest example', () => {
  let run: KpiExampleRun;

  it('digests every region through a real worker, emails each and counts them in the batch summary', async () => {
    run = await runKpiExample({ redisUrl: REDIS_URL, mysqlUrl: ns.mysqlUrl, prefix: ns.prefix, week: WEEK });
    const { summary, results } = run.batch;
    expect(summary).toMatchObject({
      tasks: REGIONS.length,
      succeeded: REGIONS.length,
      stopped: 0,
      failed: 0,
    });
    expect(summary.usage.totalTokens).toBeGreaterThan(0);

    const digests = results.map((result) => {
      expect(result, JSON.stringify(result.error)).toMatchObject({
        status: 'succeeded',
        stopReason: 'answer',
      });
      return Digest.parse(result.output);
    });
    expect(digests.map((d) => d.region).sort()).toEqual([...REGIONS].sort());
    for (const digest of digests) {
      // The numbers are the service's and the MCP server's, not the model's own.
      const kpis = kpisFor(digest.region as Region, WEEK);
      expect(digest).toMatchObject({ week: WEEK, revenue: kpis.revenue, orders: kpis.orders });
      expect(digest.vsTarget).toBe(percentOfTarget(kpis.revenue, targetsFor(digest.region).weeklyRevenue));
    }

    expect(run.emails.map((e) => e.to).sort()).toEqual(REGIONS.map((r) => [recipientOf(r)]).sort());
    for (const email of run.emails) expect(email.subject).toMatch(new RegExp(`^KPI digest \\w+ ${WEEK}$`));
  }, 180_000);

  it('called the HTTP tool and the MCP tool of each task, as its steps and the model requests show', async () => {
    expect(run.kpiRequests).toBe(REGIONS.length);
    const jobIds = run.batch.results.map((r) => r.jobId);
    const steps = await queryStore<{ job_id: string; action: unknown }>(
      ns,
      'SELECT job_id, action FROM agent_steps WHERE job_id IN (?) ORDER BY job_id, step',
      [jobIds],
    );
    for (const jobId of jobIds) {
      const actions = JSON.stringify(steps.filter((s) => s.job_id === jobId).map((s) => s.action));
      for (const tool of ['kpi_fetch', 'targets_lookup', 'send_email']) expect(actions).toContain(tool);
    }
    // What the model saw back: the service's KPIs and the MCP server's targets, as tool messages or facts.
    const toolMessages = run.modelRequests.flatMap((r) =>
      observationsIn(r.messages).map((content) => ({ content })),
    );
    for (const region of REGIONS) {
      const { weeklyRevenue } = targetsFor(region);
      expect(
        toolMessages.some((m) => String(m.content).includes(`"revenue":${kpisFor(region, WEEK).revenue}`)),
      ).toBe(true);
      expect(toolMessages.some((m) => String(m.content).includes(`"weeklyRevenue":${weeklyRevenue}`))).toBe(
        true,
      );
    }
  });
});
