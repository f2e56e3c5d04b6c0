// Scenario 4's baseline: the calls the worker made in a measured batch (the request bodies the scripted model
// recorded), replayed job by job by a bare loop over OpenAIChatModel, the adapter the worker uses (and its transport), against the same
// slow model with as many jobs in flight: no queue, no kernel, no store. Its achieved / ideal is what the `openai`
// client and the model server reach on this machine by themselves, the bound for any worker built on them.
// It runs in the benchmark process: at 500 ms a call, CPU is not what it measures.
import { Replayer, type Body } from '../lib/replay.js';

export { jobsOf } from '../lib/replay.js';

/** Runs the jobs over `concurrency` lanes, each job's calls one after the other; the wall time of the whole. */
export async function replayJobs(
  baseURL: string,
  jobs: readonly Body[][],
  concurrency: number,
): Promise<{ elapsedMs: number; errors: number }> {
  const replayer = new Replayer(baseURL, 'worker');
  const t0 = performance.now();
  const errors = await replayer.jobs(jobs, concurrency);
  return { elapsedMs: performance.now() - t0, errors };
}
