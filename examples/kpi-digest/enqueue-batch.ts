// The producer side: enqueue one kpi-digest task per region as a batch, wait for it, print each digest.
// It imports the client library only, never the fleet: a service that enqueues work needs nothing else.
// Against a running fleet: `npx tsx examples/kpi-digest/enqueue-batch.ts 2026-W48`.
import { pathToFileURL } from 'node:url';
import { FleetClient, type AgentResult, type BatchSummary } from '../../src/client/fleet-client.js';

export interface DigestBatch {
  batchId: string;
  summary: BatchSummary;
  results: AgentResult[];
}

/** The regions the kpi-digest agent accepts, read from the catalog the workers publish. */
async function regionsOf(client: FleetClient): Promise<string[]> {
  const agent = (await client.getCatalog())?.agents.find((a) => a.name === 'kpi-digest');
  const region = (agent?.input?.['properties'] as { region?: { enum?: string[] } } | undefined)?.region;
  if (!region?.enum) throw new Error('no worker serves the kpi-digest agent yet (no catalog with it)');
  return region.enum;
}

export async function enqueueDigests(options: {
  redisUrl: string;
  prefix: string;
  week: string;
  timeoutMs?: number;
}): Promise<DigestBatch> {
  const client = new FleetClient({ redisUrl: options.redisUrl, prefix: options.prefix });
  try {
    const regions = await regionsOf(client);
    // Refused here, naming the field, if a task does not fit the agent's input schema: nothing is enqueued.
    const { batchId, jobIds } = await client.enqueueBatch({
      name: `kpi digests ${options.week}`,
      tasks: regions.map((region) => ({ agent: 'kpi-digest', input: { region, week: options.week } })),
    });
    const timeoutMs = options.timeoutMs ?? 120_000;
    const { summary } = await client.waitForBatch(batchId, { timeoutMs });
    const results = await Promise.all(jobIds.map((jobId) => client.waitForResult(jobId, { timeoutMs })));
    return { batchId, summary, results };
  } finally {
    await client.close();
  }
}

export function printDigests({ batchId, summary, results }: DigestBatch): void {
  console.log(
    `batch ${batchId}: ${summary.succeeded}/${summary.tasks} succeeded, $${summary.usage.costUsd.toFixed(4)}`,
  );
  for (const result of results) {
    console.log(`${result.jobId} ${result.status}: ${JSON.stringify(result.output ?? result.error)}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const batch = await enqueueDigests({
    redisUrl: process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379',
    prefix: process.env['QUEUE_PREFIX'] ?? 'agentfleet',
    week: process.argv[2] ?? '2026-W48',
  });
  printDigests(batch);
  process.exitCode = batch.summary.succeeded === batch.summary.tasks ? 0 : 1;
}
