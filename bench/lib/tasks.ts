// Agent tasks for the scenarios: enqueued through the producers' client (validated, production job options)
// and checked afterwards through it, so a benchmark never counts runs that went wrong.
import type { FleetClient } from '../../src/client/fleet-client.js';
import { taskText } from './steps-model.js';

export async function enqueueTasks(
  client: FleetClient,
  label: string,
  count: number,
  steps: number,
): Promise<string[]> {
  const tasks = Array.from({ length: count }, (_, i) => ({
    task: taskText(`${label}-${i}`, steps),
    // Room for the planned steps whatever AGENT_MAX_STEPS says; tokens and dollars keep the fleet's defaults
    // (50,000 tokens, $0.05: enough for 6 steps), grown in proportion for longer tasks (BENCH_STEPS).
    budget: {
      maxSteps: steps + 2,
      ...(steps > 6 ? { maxTokens: Math.ceil((50_000 * steps) / 6), maxCostUsd: (0.05 * steps) / 6 } : {}),
    },
  }));
  const jobs = await client.enqueueMany(tasks);
  return jobs.map((job) => job.jobId);
}

export interface BatchCheck {
  tasks: number;
  steps: number;
  /** Tasks that did not succeed in exactly the planned number of steps, by status/steps. */
  unexpected: Record<string, number>;
}

export async function checkResults(
  client: FleetClient,
  jobIds: readonly string[],
  steps: number,
): Promise<BatchCheck> {
  const check: BatchCheck = { tasks: jobIds.length, steps: 0, unexpected: {} };
  for (let i = 0; i < jobIds.length; i += 50) {
    const results = await Promise.all(jobIds.slice(i, i + 50).map((id) => client.getResult(id)));
    for (const result of results) {
      if (!result) {
        check.unexpected['no result'] = (check.unexpected['no result'] ?? 0) + 1;
        continue;
      }
      check.steps += result.steps;
      if (result.status !== 'succeeded' || result.steps !== steps) {
        const key = `${result.status}/${result.stopReason}/${result.steps} steps`;
        check.unexpected[key] = (check.unexpected[key] ?? 0) + 1;
      }
    }
  }
  return check;
}
