// Scenario 4's baseline: the calls the worker made in a measured batch (the request bodies the scripted model
// recorded), replayed job by job by a bare loop over OpenAIChatModel, the adapter the worker uses, against the same
// slow model with as many jobs in flight: no queue, no kernel, no store. Its achieved / ideal is what the `openai`
// client and the model server reach on this machine by themselves, the bound for any worker built on them.
import type { ChatMessage, ToolSpec } from '../../src/agent/messages.js';
import { OpenAIChatModel } from '../../src/llm/openai-chat-model.js';

/** Request bodies grouped by job (the task text in the first user message), in the order they were made. */
export function jobsOf(bodies: readonly Record<string, unknown>[]): Record<string, unknown>[][] {
  const byTask = new Map<string, Record<string, unknown>[]>();
  for (const body of bodies) {
    const messages = body.messages as ChatMessage[];
    const task = String(messages.find((m) => m.role === 'user')?.content ?? '');
    const calls = byTask.get(task);
    if (calls) calls.push(body);
    else byTask.set(task, [body]);
  }
  return [...byTask.values()];
}

/** Runs the jobs over `concurrency` lanes, each job's calls one after the other; the wall time of the whole. */
export async function replayJobs(
  baseURL: string,
  jobs: readonly Record<string, unknown>[][],
  concurrency: number,
): Promise<{ elapsedMs: number; errors: number }> {
  const models = new Map<string, OpenAIChatModel>();
  const modelFor = (name: string) => {
    let model = models.get(name);
    if (!model) {
      model = new OpenAIChatModel({ model: name, apiKey: 'bench-key', baseURL });
      models.set(name, model);
    }
    return model;
  };
  let next = 0;
  let errors = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const calls = jobs[next++]!;
      // One signal per job, as a run has one for all its calls.
      const signal = new AbortController().signal;
      for (const body of calls) {
        const tools = body.tools as ToolSpec[] | undefined;
        try {
          await modelFor(String(body.model)).complete(
            {
              messages: body.messages as ChatMessage[],
              ...(tools ? { tools } : {}),
              maxTokens: Number(body.max_tokens),
              temperature: Number(body.temperature),
            },
            { signal, timeoutMs: 60_000 },
          );
        } catch {
          errors++;
        }
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { elapsedMs: performance.now() - t0, errors };
}
