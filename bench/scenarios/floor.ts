// Scenario 2: the floor. The same model calls the agent made in scenario 3 (the request bodies the scripted
// server recorded, replayed in order), made by a bare loop over OpenAIChatModel, the adapter the worker uses:
// no queue, no store, no kernel. The scripted model runs in its own process at zero latency; CPU is this
// process's own (process.cpuUsage()).
import type { ChatMessage, ToolSpec } from '../../src/agent/messages.js';
import { OpenAIChatModel } from '../../src/llm/openai-chat-model.js';
import { log, startModelServer, type ModelServer } from '../lib/fleet.js';
import { syscallsOf } from '../lib/proc.js';

export interface FloorBatch {
  calls: number;
  elapsedMs: number;
  callsPerSecond: number;
  cpuMsPerCall: number;
  readsPerCall: number;
  writesPerCall: number;
  errors: number;
}

export class FloorSession {
  private readonly models = new Map<string, OpenAIChatModel>();

  private constructor(
    private readonly server: ModelServer,
    private readonly concurrency: number,
    private readonly callsPerSignal: number,
  ) {}

  static async start(options: {
    concurrency: number;
    tool: string;
    callsPerSignal: number;
  }): Promise<FloorSession> {
    const server = await startModelServer(0, options.tool);
    return new FloorSession(server, options.concurrency, options.callsPerSignal);
  }

  private modelFor(name: string): OpenAIChatModel {
    let model = this.models.get(name);
    if (!model) {
      model = new OpenAIChatModel({ model: name, apiKey: 'bench-key', baseURL: this.server.baseURL });
      this.models.set(name, model);
    }
    return model;
  }

  /** Replays `bodies` in order over `concurrency` lanes; returns the number of failed calls. */
  private async replay(bodies: readonly Record<string, unknown>[]): Promise<number> {
    let next = 0;
    let errors = 0;
    const lane = async () => {
      // A signal per `callsPerSignal` calls, as a run has one for all its calls (the openai client leaves a
      // listener on it per call, so one signal for a whole lane would grow without end).
      let signal = new AbortController().signal;
      let calls = 0;
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const messages = body.messages as ChatMessage[];
        if (++calls > this.callsPerSignal) {
          signal = new AbortController().signal;
          calls = 1;
        }
        const tools = body.tools as ToolSpec[] | undefined;
        try {
          await this.modelFor(String(body.model)).complete(
            {
              messages,
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
    };
    await Promise.all(Array.from({ length: this.concurrency }, lane));
    return errors;
  }

  async warmUp(bodies: readonly Record<string, unknown>[]): Promise<void> {
    log(`floor: warm-up ${bodies.length} calls`);
    await this.replay(bodies);
  }

  async measure(bodies: readonly Record<string, unknown>[]): Promise<FloorBatch> {
    if (bodies.length === 0) throw new Error('the floor needs the request bodies of scenario 3');
    log(`floor: ${bodies.length} calls, concurrency ${this.concurrency}`);
    const cpu0 = process.cpuUsage();
    const io0 = syscallsOf('self');
    const t0 = performance.now();
    const errors = await this.replay(bodies);
    const elapsedMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const io1 = syscallsOf('self');
    return {
      calls: bodies.length,
      elapsedMs,
      callsPerSecond: bodies.length / (elapsedMs / 1000),
      cpuMsPerCall: (cpu.user + cpu.system) / 1000 / bodies.length,
      readsPerCall: (io1.reads - io0.reads) / bodies.length,
      writesPerCall: (io1.writes - io0.writes) / bodies.length,
      errors,
    };
  }

  close(): Promise<void> {
    return this.server.child.stop();
  }
}
