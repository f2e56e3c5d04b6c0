// The call gate: limits shared with the fleet are asked before every model call with its worst case, and
// told what each call really cost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallCost, CallGate, GateDecision } from '../src/kernel/call-gate.js';
import { startScriptedModel, type ScriptedModelServer } from '../src/testing/scripted-model-server.js';
import { runWith } from './support/kernel-harness.js';

let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel();
});
afterAll(() => server.close());

/** A shared dollar budget kept in memory, reserving worst cases and settling actuals like the Redis one. */
class MemoryGate implements CallGate {
  reserved = new Map<string, number>();
  spent = 0;
  acquired: CallCost[] = [];
  released: CallCost[] = [];
  rateLimits: (number | undefined)[] = [];
  private next = 0;
  constructor(private readonly capUsd: number) {}
  async acquire(worstCase: CallCost): Promise<GateDecision> {
    const inFlight = [...this.reserved.values()].reduce((a, b) => a + b, 0);
    if (this.spent + inFlight + worstCase.costUsd > this.capUsd) {
      return { ok: false, reason: 'cost_budget', message: 'batch budget spent' };
    }
    this.acquired.push(worstCase);
    const ticket = String(++this.next);
    this.reserved.set(ticket, worstCase.costUsd);
    return { ok: true, ticket };
  }
  async release(ticket: string, actual: CallCost): Promise<void> {
    this.reserved.delete(ticket);
    this.spent += actual.costUsd;
    this.released.push(actual);
  }
  rateLimited(retryAfterMs: number | undefined): void {
    this.rateLimits.push(retryAfterMs);
  }
}

const lookups = () => {
  let id = 0;
  return () => ({ actions: [{ tool: 'lookup', args: { id: ++id } }] });
};

describe('call gate', () => {
  it('settles every call with its real cost, which adds up to the run usage', async () => {
    server.reset({ script: [{ actions: [{ tool: 'add', args: { a: 1, b: 2 } }] }, { answer: 'three' }] });
    const gate = new MemoryGate(1);
    const { result } = await runWith(server, { gate });
    expect(result.status).toBe('succeeded');
    expect(gate.acquired).toHaveLength(2);
    expect(gate.reserved.size).toBe(0);
    expect(gate.released.reduce((sum, c) => sum + c.tokens, 0)).toBe(result.usage.totalTokens);
    expect(gate.spent).toBeCloseTo(result.usage.costUsd, 12);
    // A reservation is the worst case: never below what the call cost.
    gate.acquired.forEach((worst, i) =>
      expect(worst.costUsd).toBeGreaterThanOrEqual(gate.released[i]!.costUsd),
    );
  });

  it('a shared budget that cannot cover the next call stops the run with cost_budget, under the cap', async () => {
    server.reset({ rules: [lookups()] });
    const gate = new MemoryGate(0.02);
    const before = server.requests.length;
    const { result } = await runWith(server, { gate, budget: { maxCostUsd: 1 } });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'cost_budget' });
    expect(gate.spent).toBeLessThanOrEqual(0.02);
    expect(server.requests.length - before).toBe(gate.acquired.length);
  });

  it('a gate that refuses at once means no model call at all', async () => {
    server.reset({ script: [] });
    const before = server.requests.length;
    const { result } = await runWith(server, { gate: new MemoryGate(0) });
    expect(result).toMatchObject({ status: 'stopped', stopReason: 'cost_budget', steps: 0, answer: null });
    expect(server.requests.length).toBe(before);
  });

  it('a 429 is reported to the gate so the fleet slows down', async () => {
    server.reset({ script: [{ fault: 'rate_limit', retryAfterSeconds: 0 }, { answer: 'ok' }] });
    const gate = new MemoryGate(1);
    const { result } = await runWith(server, { gate });
    expect(result.status).toBe('succeeded');
    expect(gate.rateLimits).toEqual([0]);
    expect(gate.reserved.size).toBe(0);
  });

  it('a gate that fails ends the run with a retryable system error', async () => {
    server.reset({ script: [] });
    const broken: CallGate = {
      acquire: async () => {
        throw new Error('redis down');
      },
      release: async () => undefined,
    };
    const { result } = await runWith(server, { gate: broken });
    expect(result).toMatchObject({ status: 'failed', stopReason: 'error' });
    expect(result.error).toMatchObject({ kind: 'system', code: 'gate_unavailable', retryable: true });
  });
});
