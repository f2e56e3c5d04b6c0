// Bare loops over OpenAIChatModel, the adapter the worker uses, replaying request bodies the scripted model recorded:
// no queue, no kernel, no store. The baselines of scenarios 2 (bench/floor-client.ts) and 4 (latency-floor.ts).
import type { ChatMessage, ToolSpec } from '../../src/kernel/messages.js';
import { OpenAIChatModel } from '../../src/llm/openai-chat-model.js';

export type Body = Record<string, unknown>;

/**
 * How the loop's `openai` client moves bytes: `client-default` is the client as a user's own loop would make it
 * (Node's built-in fetch), the floor of the CPU target; `worker` is the transport the worker uses
 * (src/llm/node-http-fetch.ts), to tell what the fleet adds on top of the very same call.
 */
export type Transport = 'client-default' | 'worker';

export class Replayer {
  private readonly models = new Map<string, OpenAIChatModel>();

  constructor(
    private readonly baseURL: string,
    private readonly transport: Transport,
  ) {}

  /** One call; false when it failed. */
  async call(body: Body, signal: AbortSignal): Promise<boolean> {
    const name = String(body.model);
    let model = this.models.get(name);
    if (!model) {
      model = new OpenAIChatModel({
        model: name,
        apiKey: 'bench-key',
        baseURL: this.baseURL,
        ...(this.transport === 'client-default' ? { fetch: globalThis.fetch } : {}),
      });
      this.models.set(name, model);
    }
    const tools = body.tools as ToolSpec[] | undefined;
    try {
      await model.complete(
        {
          messages: body.messages as ChatMessage[],
          ...(tools ? { tools } : {}),
          maxTokens: Number(body.max_tokens),
          temperature: Number(body.temperature),
        },
        { signal, timeoutMs: 60_000 },
      );
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The bodies in order over `concurrency` lanes, a new signal every `callsPerSignal` calls (as a run has one for
   * all its calls). Returns the number of failed calls.
   */
  async calls(bodies: readonly Body[], concurrency: number, callsPerSignal: number): Promise<number> {
    let next = 0;
    let errors = 0;
    const lane = async () => {
      let signal = new AbortController().signal;
      let made = 0;
      while (next < bodies.length) {
        const body = bodies[next++]!;
        if (++made > callsPerSignal) {
          signal = new AbortController().signal;
          made = 1;
        }
        if (!(await this.call(body, signal))) errors++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    return errors;
  }

  /** Jobs over `concurrency` lanes, each job's calls one after the other with one signal. */
  async jobs(jobs: readonly Body[][], concurrency: number): Promise<number> {
    let next = 0;
    let errors = 0;
    const lane = async () => {
      while (next < jobs.length) {
        const calls = jobs[next++]!;
        const signal = new AbortController().signal;
        for (const body of calls) if (!(await this.call(body, signal))) errors++;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    return errors;
  }
}

/** Request bodies grouped by job (the task text in the first user message), in the order they were made. */
export function jobsOf(bodies: readonly Body[]): Body[][] {
  const byTask = new Map<string, Body[]>();
  for (const body of bodies) {
    const messages = body.messages as ChatMessage[];
    const task = String(messages.find((m) => m.role === 'user')?.content ?? '');
    const calls = byTask.get(task);
    if (calls) calls.push(body);
    else byTask.set(task, [body]);
  }
  return [...byTask.values()];
}
