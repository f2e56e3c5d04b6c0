// Scenario 2: the floor. The same model calls the agent made in scenario 3 (the request bodies the scripted
// server recorded, replayed in order), made by a bare loop over OpenAIChatModel, the adapter the worker uses:
// no queue, no store, no kernel. Twice: with the `openai` client's own transport (Node's fetch), as a user's
// bare loop would make them, the baseline of the target; and with the worker's (node:http), to tell what the
// fleet adds on top of the very same call. The loop runs in a process of its own (bench/floor-client.ts), as the worker does,
// and the scripted model in another, at zero latency.
import type { Child } from '../lib/children.js';
import { spawnChild, nextMessage } from '../lib/children.js';
import { log, startModelServer, type ModelServer } from '../lib/fleet.js';
import type { Body, Transport } from '../lib/replay.js';

export interface FloorBatch {
  calls: number;
  elapsedMs: number;
  callsPerSecond: number;
  cpuMsPerCall: number;
  readsPerCall: number;
  writesPerCall: number;
  errors: number;
}

interface Replayed {
  type: 'replayed';
  elapsedMs: number;
  cpuMs: number;
  reads: number;
  writes: number;
  errors: number;
}

export class FloorSession {
  private constructor(
    private readonly server: ModelServer,
    private readonly client: Child,
    private readonly concurrency: number,
    private readonly callsPerSignal: number,
  ) {}

  static async start(options: {
    concurrency: number;
    tool: string;
    callsPerSignal: number;
  }): Promise<FloorSession> {
    const server = await startModelServer(0, options.tool);
    const client = spawnChild(
      'floor-client',
      ['--import', 'tsx', 'bench/floor-client.ts'],
      {
        BENCH_MODEL_URL: server.baseURL,
        NODE_ENV: 'production',
      },
      { ipc: true },
    );
    try {
      await nextMessage(client, 'ready');
    } catch (error) {
      await client.stop();
      await server.child.stop();
      throw error;
    }
    return new FloorSession(server, client, options.concurrency, options.callsPerSignal);
  }

  /** Sends the bodies, then has them replayed: the transfer is not in the measured window. */
  private async replay(bodies: readonly Body[], transport: Transport): Promise<Replayed> {
    const loaded = nextMessage(this.client, 'loaded', 60_000);
    this.client.process.send({ type: 'load', bodies });
    await loaded;
    const replayed = nextMessage<Replayed>(this.client, 'replayed', 120_000);
    this.client.process.send({
      type: 'replay',
      concurrency: this.concurrency,
      callsPerSignal: this.callsPerSignal,
      transport,
    });
    return replayed;
  }

  /** Warms up both transports. */
  async warmUp(bodies: readonly Body[]): Promise<void> {
    log(`floor: warm-up ${bodies.length} calls on each transport`);
    await this.replay(bodies, 'client-default');
    await this.replay(bodies, 'worker');
  }

  async measure(bodies: readonly Body[], transport: Transport): Promise<FloorBatch> {
    if (bodies.length === 0) throw new Error('the floor needs the request bodies of scenario 3');
    log(`floor: ${bodies.length} calls, concurrency ${this.concurrency}, transport ${transport}`);
    const r = await this.replay(bodies, transport);
    return {
      calls: bodies.length,
      elapsedMs: r.elapsedMs,
      callsPerSecond: bodies.length / (r.elapsedMs / 1000),
      cpuMsPerCall: r.cpuMs / bodies.length,
      readsPerCall: r.reads / bodies.length,
      writesPerCall: r.writes / bodies.length,
      errors: r.errors,
    };
  }

  async close(): Promise<void> {
    await this.client.stop();
    await this.server.child.stop();
  }
}
