// Notes found by embedding similarity (NOTES_EMBEDDING_MODEL) through a real worker (Redis, MariaDB, the scripted
// model over HTTP, whose /v1/embeddings answers a hashed bag of words): the embedding path is taken and ranks by
// cosine where FULLTEXT would rank otherwise; every embedding is a model call the run pays (its usage is the
// server's own count of chat and embedding tokens and dollars, the spend ledger books it); a budget that cannot pay
// for an embedding gets none; an endpoint that fails falls back to FULLTEXT, and the run succeeds.
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { batchScope } from '../../../src/fleet/spend-scopes.js';
import { SpendLedger } from '../../../src/fleet/spend-ledger.js';
import { MysqlNoteStore } from '../../../src/notes/notes-store.js';
import { createStorePool } from '../../../src/store/pool.js';
import { embeddingOf } from '../../../src/notes/embedding-bytes.js';
import { scriptedEmbedding } from '../../../src/testing/scripted-embeddings.js';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptedReply,
} from '../../../src/testing/scripted-model-server.js';
import { modelCalls } from '../../../src/testing/transcript.js';
import {
  createNamespace,
  killWorker,
  queryStore,
  REDIS_URL,
  startWorker,
  type FleetNamespace,
  type WorkerHandle,
} from '../../support/fleet-harness.js';
import { setupOrFail } from '../../support/setup-or-fail.js';
import type { AgentResult } from '../../../src/kernel/types.js';

let model: ScriptedModelServer;
let ns: FleetNamespace;
let worker: WorkerHandle;
let redis: Redis;
let ledger: SpendLedger;

const TASK = 'What is the total revenue?';
const EMBEDDING_MODEL = 'text-embedding-3-small';
/** USD per million input tokens of the embedding model (config/prices.json), and of the chat model's. */
const EMBEDDING_PRICE = 0.02;
const CHAT_PRICE = { input: 10, output: 30 }; // gpt-4-turbo-preview, the harness's model

/** The sales analyst of notes-across-runs.test.ts: it sums `revenue` unless it read which column worked. */
function salesModel(request: RecordedRequest): ScriptedReply | undefined {
  if (!String(request.messages[1]?.content ?? '').includes(TASK)) return undefined;
  const calls = modelCalls(request.messages);
  const own = calls.filter((c) => c.tool === 'sales_query');
  const done = own.find((c) => c.result?.includes('"total"'));
  if (done) return { answer: `total: ${done.result}` };
  const read = calls.map((c) => c.result ?? '').join('\n');
  const learned = /it worked with \{\\?"column\\?":\\?"(\w+)\\?"\}/.exec(read)?.[1];
  if (learned) return { actions: [{ tool: 'sales_query', args: { column: learned } }] };
  if (own.some((c) => /Unknown column 'revenue'/.test(c.result ?? ''))) {
    return { actions: [{ tool: 'sales_query', args: { column: 'amount' } }] };
  }
  return { actions: [{ tool: 'sales_query', args: { column: 'revenue' } }] };
}

/**
 * `ask:` tasks: looks notes up with its own query (the task's words after `ask:`), then answers with what that
 * found; `keep:` tasks: keeps a note (the words after `keep:`), then answers.
 */
function askModel(request: RecordedRequest): ScriptedReply | undefined {
  const task = String(request.messages[1]?.content ?? '');
  const calls = modelCalls(request.messages);
  if (task.startsWith('ask:')) {
    const asked = calls.find((c) => c.tool === 'recall_notes' && c.id !== 'call_recall_notes_0');
    if (asked) return { answer: asked.result ?? 'none' };
    return { actions: [{ tool: 'recall_notes', args: { query: task.slice(4).trim() } }] };
  }
  if (task.startsWith('keep:')) {
    if (calls.some((c) => c.tool === 'keep_note')) return { answer: 'kept' };
    return { actions: [{ tool: 'keep_note', args: { text: task.slice(5).trim() } }] };
  }
  return undefined;
}

/** `sim:` tasks: answers with what the opening recall gave it (the notes in their order), or `none`. */
function echoModel(request: RecordedRequest): ScriptedReply | undefined {
  if (!String(request.messages[1]?.content ?? '').startsWith('sim:')) return undefined;
  const recall = modelCalls(request.messages).find((c) => c.tool === 'recall_notes');
  return { answer: recall?.result ?? 'none' };
}

setupOrFail(async () => {
  ns = createNamespace('notesemb');
  model = await startScriptedModel({ rules: [salesModel, echoModel, askModel] });
  worker = startWorker(ns, {
    OPENAI_BASE_URL: model.baseURL,
    FLEET_CONFIG: 'test/fixtures/fleets/notes.config.ts',
    NOTES_EMBEDDING_MODEL: EMBEDDING_MODEL,
  });
  redis = new Redis(REDIS_URL);
  ledger = new SpendLedger({ redis, prefix: ns.prefix });
  await worker.waitForOutput(/worker started/, 60_000);
});

afterAll(async () => {
  if (worker) await killWorker(worker);
  redis?.disconnect();
  await ns?.cleanup();
  await model?.close();
});

async function run(task: unknown) {
  const chatFirst = model.requests.length;
  const embFirst = model.embeddings.requests.length;
  const { jobId } = await ns.client.enqueue(task);
  const result = (await ns.client.waitForResult(jobId, { timeoutMs: 60_000 })) as AgentResult;
  return {
    result,
    chat: model.requests.slice(chatFirst),
    embeddings: model.embeddings.requests.slice(embFirst),
  };
}

/** What the scripted server itself says the run's calls cost: its chat usage and its embeddings' tokens. */
function served(chat: RecordedRequest[], embeddings: { promptTokens: number }[]) {
  const prompt = chat.reduce((sum, r) => sum + r.usage!.promptTokens, 0);
  const completion = chat.reduce((sum, r) => sum + r.usage!.completionTokens, 0);
  const embedded = embeddings.reduce((sum, r) => sum + r.promptTokens, 0);
  return {
    promptTokens: prompt + embedded,
    completionTokens: completion,
    embedded,
    costUsd: (prompt * CHAT_PRICE.input + completion * CHAT_PRICE.output + embedded * EMBEDDING_PRICE) / 1e6,
  };
}

it('embeddings are billed to the run: its usage is the server’s own count of chat and embedding tokens and dollars', async () => {
  // A first run: nothing to recall (no embedding of its task), a correction left, embedded at the run's end.
  const first = await run({ agent: 'analyst', tenant: 'bill', task: TASK });
  expect(first.result.status).toBe('succeeded');
  expect(first.chat).toHaveLength(3);
  expect(first.embeddings).toHaveLength(1);
  expect(first.embeddings[0]).toMatchObject({ model: EMBEDDING_MODEL, status: 200 });
  expect(first.embeddings[0]!.input[0]).toContain("Unknown column 'revenue'");
  const expected = served(first.chat, first.embeddings);
  expect(expected.embedded).toBeGreaterThan(0);
  expect(first.result.usage.promptTokens).toBe(expected.promptTokens);
  expect(first.result.usage.completionTokens).toBe(expected.completionTokens);
  expect(first.result.usage.totalTokens).toBe(expected.promptTokens + expected.completionTokens);
  expect(first.result.usage.costUsd).toBeCloseTo(expected.costUsd, 12);
  expect(first.result.usage.embeddings).toEqual({
    calls: 1,
    tokens: expected.embedded,
    costUsd: expect.closeTo((expected.embedded * EMBEDDING_PRICE) / 1e6, 15) as number,
  });
  const rows = await queryStore<{ embedding: unknown }>(
    ns,
    "SELECT embedding FROM agent_notes WHERE agent = 'analyst' AND tenant = 'bill'",
  );
  expect(rows).toHaveLength(1);
  // Kept as float32 bytes: 64 dimensions, 4 bytes each.
  expect(rows[0]!.embedding).toBeInstanceOf(Buffer);
  expect(embeddingOf(rows[0]!.embedding as Buffer)).toHaveLength(64);

  // The second run embeds its task for the opening recall (paid before its kernel starts, counted by it).
  const second = await run({ agent: 'analyst', tenant: 'bill', task: TASK });
  expect(second.result.status).toBe('succeeded');
  expect(second.chat).toHaveLength(2);
  expect(second.embeddings.map((e) => e.input[0])).toEqual([TASK]);
  const again = served(second.chat, second.embeddings);
  expect(second.result.usage.promptTokens).toBe(again.promptTokens);
  expect(second.result.usage.costUsd).toBeCloseTo(again.costUsd, 12);
  expect(second.result.usage.embeddings).toMatchObject({ calls: 1, tokens: again.embedded });
}, 120_000);

const NEAR = 'xy qz vb'; // words FULLTEXT cannot see (shorter than InnoDB's minimum token size)
const FAR = 'revenue figures are kept monthly';
const SIM_TASK = `sim: ${NEAR} revenue`;

it('with embeddings on, notes are ranked by cosine; FULLTEXT would rank them the other way', async () => {
  const pool = await createStorePool(ns.mysqlUrl, { connectionLimit: 1 });
  try {
    const store = new MysqlNoteStore(pool);
    const expiresAt = new Date(Date.now() + 86_400_000);
    const draft = {
      agent: 'analyst',
      tenant: 'sim',
      kind: 'fact' as const,
      sourceJobId: 'seed',
      sourceStep: 0,
      expiresAt,
    };
    await store.add([{ ...draft, text: NEAR, embedding: scriptedEmbedding(NEAR) }]);
    await store.add([{ ...draft, text: FAR, embedding: scriptedEmbedding(FAR) }]);
  } finally {
    await pool.end();
  }
  const similar = await run({ agent: 'analyst', tenant: 'sim', task: SIM_TASK });
  expect(similar.result.status).toBe('succeeded');
  expect(similar.embeddings.map((e) => e.input[0])).toEqual([SIM_TASK]);
  const answer = similar.result.answer!;
  expect(answer.indexOf(NEAR)).toBeGreaterThanOrEqual(0);
  expect(answer.indexOf(NEAR)).toBeLessThan(answer.indexOf(FAR));
  expect(similar.result.usage.embeddings?.calls).toBe(1);

  // The endpoint failing: the lookup is FULLTEXT's (the note sharing `revenue` first), the run succeeds, the
  // warning names no key, and nothing is billed for the failed call.
  model.embeddings.fault = 'server_error';
  try {
    const fallback = await run({ agent: 'analyst', tenant: 'sim', task: SIM_TASK });
    expect(fallback.result.status).toBe('succeeded');
    expect(fallback.embeddings.map((e) => e.status)).toEqual([500]);
    const text = fallback.result.answer!;
    expect(text.indexOf(FAR)).toBeGreaterThanOrEqual(0);
    expect(text.indexOf(FAR)).toBeLessThan(text.indexOf(NEAR));
    expect(fallback.result.usage.embeddings).toBeUndefined();
    expect(fallback.result.usage.promptTokens).toBe(served(fallback.chat, []).promptTokens);
    await worker.waitForOutput(/an embedding failed: FULLTEXT instead/, 10_000);
    expect(worker.output()).not.toContain('test-key');
    model.embeddings.fault = 'bad_vector';
    const badVector = await run({ agent: 'analyst', tenant: 'sim', task: SIM_TASK });
    expect(badVector.result.status).toBe('succeeded');
    const bad = badVector.result.answer!;
    expect(bad.indexOf(FAR)).toBeLessThan(bad.indexOf(NEAR));
    // The endpoint billed the call: the run pays it, though its vector was no use.
    expect(badVector.result.usage.embeddings).toMatchObject({ calls: 1 });
  } finally {
    model.embeddings.fault = null;
  }
}, 120_000);

it('a run whose budget cannot pay for an embedding makes none, and stays within its budget', async () => {
  // A task of 2,000 bytes and more: its embedding's worst case (2,000 tokens) is past a tenth of 15,000 tokens.
  const task = `sim: ${NEAR} revenue ${'z'.repeat(3_000)}`;
  const budget = { maxTokens: 15_000 };
  const tight = await run({ agent: 'analyst', tenant: 'sim', task, budget });
  expect(tight.result.status).toBe('succeeded');
  expect(tight.embeddings).toHaveLength(0);
  expect(tight.result.usage.embeddings).toBeUndefined();
  expect(tight.result.answer).toContain(FAR); // recalled by FULLTEXT
  expect(tight.result.usage.totalTokens).toBeLessThanOrEqual(budget.maxTokens);
}, 120_000);

it('the spend ledger books embeddings like any model call: the batch counts them', async () => {
  const { batchId, jobIds } = await ns.client.enqueueBatch({
    tasks: [{ agent: 'analyst', tenant: 'sim', task: SIM_TASK }],
    budget: { maxCostUsd: 5 },
  });
  await ns.client.waitForBatch(batchId, { timeoutMs: 60_000 });
  const result = (await ns.client.getResult(jobIds[0]!))!;
  expect(result.usage.embeddings?.calls).toBe(1);
  await expect
    .poll(() => ledger.getSpend(batchScope(batchId)), { timeout: 10_000 })
    .toMatchObject({ usedTokens: result.usage.totalTokens, liveReservations: 0 });
}, 120_000);

it('a recall_notes query and a kept note are embedded, paid through the kernel, and billed like the rest', async () => {
  // The model asks with words only the near note has: cosine ranks it first.
  const asked = await run({ agent: 'analyst', tenant: 'sim', task: `ask: ${NEAR}` });
  expect(asked.result.status).toBe('succeeded');
  expect(asked.embeddings.map((e) => e.input[0])).toEqual([`ask: ${NEAR}`, NEAR]);
  const found = asked.result.answer!;
  expect(found.indexOf(NEAR)).toBeGreaterThanOrEqual(0);
  expect(found.indexOf(NEAR)).toBeLessThan(found.indexOf(FAR));
  const count = served(asked.chat, asked.embeddings);
  expect(asked.result.usage.promptTokens).toBe(count.promptTokens);
  expect(asked.result.usage.costUsd).toBeCloseTo(count.costUsd, 12);
  expect(asked.result.usage.embeddings).toMatchObject({ calls: 2, tokens: count.embedded });

  const text = 'Refunds are booked as negative amounts.';
  const kept = await run({ agent: 'scribe', tenant: 'sim', task: `keep: ${text}` });
  expect(kept.result).toMatchObject({ status: 'succeeded', answer: 'kept' });
  expect(kept.embeddings.map((e) => e.input[0])).toEqual([text]);
  expect(kept.result.usage.promptTokens).toBe(served(kept.chat, kept.embeddings).promptTokens);
  const rows = await queryStore<{ embedding: unknown }>(
    ns,
    "SELECT embedding FROM agent_notes WHERE agent = 'scribe' AND tenant = 'sim'",
  );
  expect(rows).toHaveLength(1);
  expect(rows[0]!.embedding).not.toBeNull();
}, 120_000);
