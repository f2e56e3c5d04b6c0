// One run's notes against a store in memory (src/worker/run-notes.ts): what the opening recall counts against the
// agent's token allowance, and what a model may keep with keep_note in one run.
import { describe, expect, it } from 'vitest';
import { recallOutput } from '../../../src/kernel/recalled-notes.js';
import type { RunError } from '../../../src/kernel/errors.js';
import type { Tool, ToolContext } from '../../../src/kernel/tool.js';
import type { AgentResult, StepTrace } from '../../../src/kernel/types.js';
import { tokenCounterFor } from '../../../src/kernel/tokens.js';
import { createLogger } from '../../../src/logging/logger.js';
import { noteText, type Note, type NoteDraft, type NoteStore } from '../../../src/notes/note.js';
import { noteIdOf, noteTextHash } from '../../../src/notes/notes-store.js';
import { NoteEmbedder } from '../../../src/notes/note-embedder.js';
import { KEEP_NOTE_TOOL, MAX_KEPT_PER_RUN, RunNotes } from '../../../src/worker/run-notes.js';

const log = createLogger('test', 'silent');
const count = tokenCounterFor('gpt-4o');
const owner = { agent: 'analyst', tenant: 'acme' };

/** A NoteStore of one map: enough for what a session asks of it. */
function memoryStore(): NoteStore & { notes: Map<string, Note>; weighedDown: string[][] } {
  const notes = new Map<string, Note>();
  const weighedDown: string[][] = [];
  return {
    notes,
    weighedDown,
    async add(drafts: readonly NoteDraft[]) {
      await Promise.resolve();
      return drafts.map((draft) => {
        const text = noteText(draft.text);
        const id = noteIdOf(draft.agent, draft.tenant, noteTextHash(text));
        if (!notes.has(id))
          notes.set(id, {
            ...draft,
            text,
            id,
            createdAt: new Date('2026-12-06T00:00:00Z'),
            lastUsedAt: null,
            useCount: 0,
            weight: 1,
          });
        return id;
      });
    },
    async recall(query) {
      return [...notes.values()]
        .filter((n) => n.agent === query.agent && n.tenant === query.tenant)
        .slice(0, query.limit);
    },
    async markUsed() {},
    async weighDown(ids) {
      weighedDown.push([...ids]);
    },
    async list() {
      return [...notes.values()];
    },
    async get(id) {
      return notes.get(id) ?? null;
    },
    async forget(id) {
      return notes.delete(id);
    },
    async forgetAll() {
      return 0;
    },
  };
}

const ctx = (step: number): ToolContext => ({
  signal: new AbortController().signal,
  runId: 'job-1',
  callKey: `job-1:${step}:0`,
  step,
  once: (effect) => effect(),
});

async function call(tool: Tool, args: unknown, step: number): Promise<unknown> {
  return tool.execute(tool.parameters.parse(args), ctx(step));
}

describe('the opening recall and the token allowance', () => {
  it('holds the notes to what their result really takes of the prompt, ids left out as the model is shown them', async () => {
    const store = memoryStore();
    await store.add(
      Array.from({ length: 5 }, (_, i) => ({
        ...owner,
        kind: 'fact' as const,
        text: `orders.amount_usd holds the amount in dollars, fact number ${i}`,
        sourceJobId: 'job-0',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01T00:00:00Z'),
      })),
    );
    const all = await store.recall({ ...owner, text: 'x', limit: 5 });
    const shown = all.map((n) => ({ id: n.id, kind: n.kind, learned: '2026-12-06', text: n.text }));
    // An allowance exactly as large as the recall's result with every note: all five fit.
    const maxTokens = count(recallOutput(shown));
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens, keepDays: 30, write: false },
      'x',
    );
    const recall = await session.opening(log);
    expect(recall?.notes).toHaveLength(5);
    // And never more than the allowance.
    expect(count(recallOutput(recall!.notes))).toBeLessThanOrEqual(maxTokens);
    const tighter = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens: maxTokens - 1, keepDays: 30, write: false },
      'x',
    );
    const fewer = await tighter.opening(log);
    expect(fewer?.notes).toHaveLength(4);
    expect(count(recallOutput(fewer!.notes))).toBeLessThanOrEqual(maxTokens - 1);
  });
});

describe("the allowance is counted in the tokens of the run's model", () => {
  it("a run of a model with another tokenizer than the worker's default is held to its allowance in its own tokens", async () => {
    const store = memoryStore();
    await store.add(
      Array.from({ length: 5 }, (_, i) => ({
        ...owner,
        kind: 'fact' as const,
        text: `ऑर्डर की कुल राशि amount_usd कॉलम में है, revenue कॉलम मौजूद नहीं है। ${i}`,
        sourceJobId: 'job-0',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01T00:00:00Z'),
      })),
    );
    const model = 'gpt-4-turbo-preview'; // cl100k, while the worker's default model (gpt-4o) counts in o200k
    const own = tokenCounterFor(model);
    const all = (await store.recall({ ...owner, text: 'x', limit: 5 })).map((n) => ({
      id: n.id,
      kind: n.kind,
      learned: '2026-12-06',
      text: n.text,
    }));
    const maxTokens = own(recallOutput(all.slice(0, 2)));
    expect(count(recallOutput(all.slice(0, 3)))).toBeLessThanOrEqual(maxTokens); // the default lets three in
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens, keepDays: 30, write: false },
      'x',
      model,
    );
    const recall = await session.opening(log);
    expect(recall?.notes).toHaveLength(2);
    expect(own(recallOutput(recall!.notes))).toBeLessThanOrEqual(maxTokens);
  });
});

describe('keep_note', () => {
  it(`keeps ${MAX_KEPT_PER_RUN} notes a run at most: a model cannot flood its agent's notes`, async () => {
    const store = memoryStore();
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens: 400, keepDays: 30, write: true },
      'x',
    );
    const keep = session.tools(false).find((t) => t.name === KEEP_NOTE_TOOL)!;
    // In one turn (its calls run together) and over later ones.
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) =>
        call(keep, { text: `note ${i}` }, 1).catch((error: Error) => `Error: ${error.message}`),
      ),
    );
    answers.push(
      await call(keep, { text: 'one more' }, 2).catch((error: Error) => `Error: ${error.message}`),
    );
    expect(store.notes.size).toBe(MAX_KEPT_PER_RUN);
    expect(answers.filter((a) => String(a).startsWith('kept as '))).toHaveLength(MAX_KEPT_PER_RUN);
    expect(answers.at(-1)).toMatch(/^Error: .*at most/);
    // A text it already kept is still answered with its note.
    expect(await call(keep, { text: 'note 0' }, 3)).toBe(answers[0]);
  });

  it('the same text kept again is the same note and does not count twice', async () => {
    const store = memoryStore();
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens: 400, keepDays: 30, write: true },
      'x',
    );
    const keep = session.tools(false).find((t) => t.name === KEEP_NOTE_TOOL)!;
    for (let i = 0; i < MAX_KEPT_PER_RUN + 5; i++) await call(keep, { text: 'the same  note' }, 1);
    await call(keep, { text: 'another\u0007 note' }, 2);
    expect(store.notes.size).toBe(2);
    expect([...store.notes.values()].map((n) => n.text)).toEqual(['the same  note', 'another note']);
  });
});

describe('a failed run and the notes it was shown', () => {
  const failed = (error: RunError): AgentResult => ({
    jobId: 'job-1',
    status: 'failed',
    stopReason: 'error',
    answer: null,
    steps: 1,
    toolCalls: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, costUsd: 0 },
    error,
  });

  async function closeWith(error: RunError): Promise<string[][]> {
    const store = memoryStore();
    await store.add([
      {
        ...owner,
        kind: 'fact',
        text: 'a good note',
        sourceJobId: 'job-0',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01'),
      },
    ]);
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens: 400, keepDays: 30, write: false },
      'x',
    );
    expect((await session.opening(log))?.notes).toHaveLength(1);
    await session.close({ jobId: 'job-1', traces: [], result: failed(error) }, log);
    return store.weighedDown;
  }

  it('weighs them down when the model went wrong', async () => {
    const weighed = await closeWith({
      kind: 'model_behavior',
      code: 'repeated_action',
      message: 'x',
      retryable: false,
    });
    expect(weighed).toHaveLength(1);
  });

  it("leaves them be when the failure was not the run's reasoning: an outage, a tool away, a bad key", async () => {
    // Each attempt of a job that fails retryably ends here: three attempts through one outage would delete them.
    for (const error of [
      { kind: 'model_api', code: 'http_503', message: 'x', retryable: true },
      { kind: 'model_api', code: 'http_401', message: 'x', retryable: false },
      { kind: 'tool', code: 'tool_unavailable', message: 'x', retryable: true },
      { kind: 'tool', code: 'uncertain_effects', message: 'x', retryable: false },
      { kind: 'system', code: 'unexpected', message: 'x', retryable: false },
    ] satisfies RunError[]) {
      expect(await closeWith(error), error.code).toEqual([]);
    }
  });
});

describe('embeddings of a run’s notes', () => {
  const settings = { recall: 5, maxTokens: 400, keepDays: 30, write: false };
  const budget = { maxSteps: 8, maxTokens: 10_000, maxCostUsd: 0.05, deadlineMs: 60_000 };
  /** An endpoint in memory: every text is [1, 0], billed 7 tokens. */
  function embedderOf(calls: string[]) {
    return new NoteEmbedder(
      {
        embed: async (input) => {
          calls.push(input);
          return { vector: [1, 0], promptTokens: 7 };
        },
      },
      { model: 'text-embedding-3-small', inputPerMillion: 0.02 },
    );
  }
  const step = (n: number, column: string, ok: boolean): StepTrace => ({
    runId: 'job-1',
    step: n,
    kind: 'action',
    actions: [
      {
        id: `c${n}`,
        tool: 'sales_query',
        args: { column },
        ok,
        errorCode: ok ? null : 'invalid_query',
        latencyMs: 1,
      },
    ],
    observations: [ok ? '{"total":1}' : "Unknown column 'revenue' in 'field list'"],
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
    latencyMs: 1,
    modelLatencyMs: 1,
    modelCalls: 1,
    error: null,
    totals: {
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
      costUsd: 0,
      steps: n,
      maxSteps: 8,
      toolCalls: n,
    },
  });
  const traces = [step(1, 'revenue', false), step(2, 'amount', true)];
  const ended = (result: Partial<AgentResult>): AgentResult => ({
    jobId: 'job-1',
    status: 'succeeded',
    stopReason: 'answer',
    answer: 'x',
    steps: 2,
    toolCalls: 2,
    usage: { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd: 0.001 },
    error: null,
    ...result,
  });
  const pay = { budget, timeLeftMs: () => 1_000 };

  it('embeds the notes a run leaves while its budget pays, adding what they cost to its usage', async () => {
    const store = memoryStore();
    const calls: string[] = [];
    const session = new RunNotes(store, count, embedderOf(calls)).session(
      owner,
      settings,
      'x',
      undefined,
      log,
    );
    const result = ended({});
    await session.close({ jobId: 'job-1', traces, result }, log, pay);
    expect(calls).toHaveLength(1);
    expect([...store.notes.values()][0]?.embedding).toEqual([1, 0]);
    expect(result.usage).toMatchObject({
      promptTokens: 107,
      totalTokens: 117,
      embeddings: { calls: 1, tokens: 7 },
    });
    expect(result.usage.costUsd).toBeCloseTo(0.001 + (7 * 0.02) / 1e6, 15);
  });

  it("a parent's notes embedded at its end are its own: in usage.self too, so usage minus self stays its children's", async () => {
    const store = memoryStore();
    const session = new RunNotes(store, count, embedderOf([])).session(owner, settings, 'x', undefined, log);
    const self = { promptTokens: 100, completionTokens: 10, totalTokens: 110, costUsd: 0.001 };
    const children = { promptTokens: 50, completionTokens: 5, totalTokens: 55, costUsd: 0.0005 };
    const result = ended({
      usage: {
        promptTokens: 150,
        completionTokens: 15,
        totalTokens: 165,
        costUsd: 0.0015,
        self,
      },
    });
    await session.close({ jobId: 'job-1', traces, result }, log, pay);
    const usage = result.usage;
    expect(usage.embeddings).toMatchObject({ calls: 1, tokens: 7 });
    expect(usage.totalTokens - usage.self!.totalTokens).toBe(children.totalTokens);
    expect(usage.promptTokens - usage.self!.promptTokens).toBe(children.promptTokens);
    expect(usage.costUsd - usage.self!.costUsd).toBeCloseTo(children.costUsd, 15);
  });

  it('embeds them within the time the run’s end allows, all told: a slow endpoint delays its result no longer', async () => {
    const store = memoryStore();
    const slow = new NoteEmbedder(
      {
        embed: (_input, signal) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          }),
      },
      { model: 'text-embedding-3-small', inputPerMillion: 0.02 },
    );
    const session = new RunNotes(store, count, slow).session(owner, settings, 'x', undefined, log);
    const started = Date.now();
    await session.close({ jobId: 'job-1', traces, result: ended({}) }, log, {
      budget,
      timeLeftMs: () => 300,
    });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(store.notes.size).toBe(1);
    expect([...store.notes.values()][0]?.embedding).toBeUndefined();
  });

  it('keeps them without an embedding when the budget left cannot pay, or the attempt will be retried', async () => {
    for (const result of [
      ended({ usage: { promptTokens: 9_990, completionTokens: 5, totalTokens: 9_995, costUsd: 0.01 } }),
      ended({
        status: 'failed',
        stopReason: 'error',
        error: { kind: 'model_api', code: 'http_503', message: 'x', retryable: true },
      }),
    ]) {
      const store = memoryStore();
      const calls: string[] = [];
      const session = new RunNotes(store, count, embedderOf(calls)).session(
        owner,
        settings,
        'x',
        undefined,
        log,
      );
      const before = { ...result.usage };
      await session.close({ jobId: 'job-1', traces, result }, log, pay);
      expect(calls).toEqual([]);
      expect(store.notes.size).toBe(1);
      expect([...store.notes.values()][0]?.embedding).toBeUndefined();
      expect(result.usage).toEqual(before);
    }
  });

  it('embeds the task for the opening recall within a tenth of the budget, and says what it cost', async () => {
    const store = memoryStore();
    await store.add([
      {
        ...owner,
        kind: 'fact',
        text: 'a note',
        sourceJobId: 'j',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01'),
      },
    ]);
    const calls: string[] = [];
    const session = new RunNotes(store, count, embedderOf(calls)).session(
      owner,
      settings,
      'the task',
      undefined,
      log,
    );
    expect((await session.opening(log, pay))?.notes).toHaveLength(1);
    expect(calls).toEqual(['the task']);
    expect(session.openingEmbeddings).toMatchObject({ calls: 1, tokens: 7 });
    // A budget whose tenth cannot pay for the task's worst case (its bytes): FULLTEXT, nothing spent.
    const poor = new RunNotes(store, count, embedderOf(calls)).session(
      owner,
      settings,
      'the task',
      undefined,
      log,
    );
    expect((await poor.opening(log, { ...pay, budget: { ...budget, maxTokens: 50 } }))?.notes).toHaveLength(
      1,
    );
    expect(calls).toHaveLength(1);
    expect(poor.openingEmbeddings).toBeUndefined();
  });

  it('gives the opening recall’s embedding a tenth of the run’s time at most: a slow endpoint cannot eat its deadline', async () => {
    const store = memoryStore();
    await store.add([
      {
        ...owner,
        kind: 'fact',
        text: 'a note',
        sourceJobId: 'j',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01'),
      },
    ]);
    // An endpoint that answers only when the call is aborted (its own 10 s limit, or the signal).
    const slow = new NoteEmbedder(
      {
        embed: (_input, signal) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
          }),
      },
      { model: 'text-embedding-3-small', inputPerMillion: 0.02 },
    );
    const session = new RunNotes(store, count, slow).session(owner, settings, 'the task', undefined, log);
    const started = Date.now();
    const recall = await session.opening(log, { ...pay, budget: { ...budget, deadlineMs: 2_000 } });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(recall?.notes).toHaveLength(1); // FULLTEXT's
  });
});

describe('a fact the run contradicts', () => {
  const describeStep = (observation: string): StepTrace =>
    ({
      runId: 'job-1',
      step: 1,
      kind: 'action',
      actions: [
        {
          id: 'c1',
          tool: 'describe_table',
          args: { table: 'orders' },
          ok: true,
          errorCode: null,
          latencyMs: 1,
        },
      ],
      observations: [observation],
      promptTokens: 0,
      completionTokens: 0,
      costUsd: 0,
      latencyMs: 1,
      modelLatencyMs: 1,
      modelCalls: 1,
      error: null,
    }) as StepTrace;

  it('is dropped by a run with no failed call that made the same call and got another result', async () => {
    const store = memoryStore();
    const [old] = await store.add([
      {
        ...owner,
        kind: 'fact',
        text: 'describe_table returned, for {"table":"orders"}: "orders:\\nstatus varchar(16)"',
        sourceJobId: 'job-0',
        sourceStep: 1,
        expiresAt: new Date('2027-01-01'),
      },
    ]);
    const session = new RunNotes(store, count).session(
      owner,
      { recall: 5, maxTokens: 400, keepDays: 30, write: false },
      'x',
    );
    expect((await session.opening(log))?.notes).toHaveLength(1);
    const result = {
      jobId: 'job-1',
      status: 'succeeded',
      stopReason: 'answer',
      answer: 'x',
      steps: 2,
      toolCalls: 1,
    };
    await session.close(
      {
        jobId: 'job-1',
        traces: [describeStep('orders:\norder_status varchar(16)')],
        result: {
          ...result,
          usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, costUsd: 0 },
          error: null,
        } as AgentResult,
        keepsFacts: (tool) => tool === 'describe_table',
      },
      log,
    );
    const texts = [...store.notes.values()].map((n) => n.text);
    expect(store.notes.has(old!)).toBe(false);
    expect(texts).toEqual([expect.stringContaining('order_status')]);
  });
});
