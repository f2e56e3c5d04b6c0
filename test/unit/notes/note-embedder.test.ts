// The notes' embedder against the scripted server's /v1/embeddings over HTTP, through the real `openai` client:
// the server refuses what the API refuses (400s shaped like OpenAI's), its vectors put texts that share words
// close, and the embedder pays each call from a purse (worst case reserved, the reported tokens settled), falling
// back (undefined) on any failure without logging the key.
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CallCost } from '../../../src/kernel/call-gate.js';
import type { SidePurse } from '../../../src/kernel/side-spend.js';
import { OpenAIEmbeddings } from '../../../src/llm/openai-embeddings.js';
import { cosine } from '../../../src/notes/cosine.js';
import { EMBED_MAX_CHARS, NoteEmbedder } from '../../../src/notes/note-embedder.js';
import { scriptedEmbedding } from '../../../src/testing/scripted-embeddings.js';
import { startScriptedModel, type ScriptedModelServer } from '../../../src/testing/scripted-model-server.js';

const MODEL = 'text-embedding-3-small';
const KEY = 'sk-secret-embedding-key';
let server: ScriptedModelServer;
beforeAll(async () => {
  server = await startScriptedModel({ apiKey: KEY, embeddings: { maxInputTokens: 50 } });
});
afterAll(() => server.close());

function purse(refuse = false) {
  const reserved: CallCost[] = [];
  const settled: CallCost[] = [];
  const p: SidePurse = {
    reserve: async (worst) => {
      if (refuse) return null;
      reserved.push(worst);
      return { settle: async (actual) => void settled.push(actual) };
    },
  };
  return { p, reserved, settled };
}

function logger() {
  const lines: string[] = [];
  return {
    lines,
    warn: (fields: Record<string, unknown>, message: string) =>
      void lines.push(`${message} ${JSON.stringify(fields)}`),
  };
}

const embedder = (key = KEY) =>
  new NoteEmbedder(
    new OpenAIEmbeddings(MODEL, { apiKey: key, baseURL: server.baseURL, fetch: globalThis.fetch }),
    {
      model: MODEL,
      inputPerMillion: 0.02,
      secret: key,
    },
  );

async function post(body: unknown) {
  const response = await fetch(`${server.baseURL}/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { error?: { message: string; type: string } },
  };
}

it('refuses what the API refuses, with a 400 shaped like OpenAI’s', async () => {
  for (const body of [
    { input: 'x' },
    { model: MODEL },
    { model: MODEL, input: '' },
    { model: MODEL, input: 'word '.repeat(80) },
  ]) {
    const answer = await post(body);
    expect(answer.status, JSON.stringify(body)).toBe(400);
    expect(answer.body.error).toMatchObject({ type: 'invalid_request_error' });
  }
  expect((await post({ model: MODEL, input: 'word '.repeat(80) })).body.error?.message).toMatch(
    /maximum context length is 50 tokens/,
  );
});

it('texts that share words are closer than texts that do not', () => {
  const a = scriptedEmbedding('unknown column revenue in orders');
  expect(cosine(a, scriptedEmbedding('the revenue column of orders'))).toBeGreaterThan(
    cosine(a, scriptedEmbedding('fiscal year starts in april'))!,
  );
});

it('pays each embedding from the purse: its worst case reserved, the tokens the server billed settled', async () => {
  const { p, reserved, settled } = purse();
  const log = logger();
  const first = server.embeddings.requests.length;
  const vector = await embedder().embed('total revenue by region', p, new AbortController().signal, log);
  expect(vector).toEqual(scriptedEmbedding('total revenue by region'));
  const billed = server.embeddings.requests.slice(first).reduce((s, r) => s + r.promptTokens, 0);
  expect(billed).toBeGreaterThan(0);
  expect(settled).toEqual([{ tokens: billed, costUsd: (billed * 0.02) / 1e6 }]);
  expect(reserved[0]!.tokens).toBeGreaterThanOrEqual(billed);
  expect(log.lines).toEqual([]);
});

it('cuts a long text to its bound before sending it', async () => {
  const { p, reserved } = purse();
  const first = server.embeddings.requests.length;
  await embedder().embed('a'.repeat(EMBED_MAX_CHARS * 2), p, new AbortController().signal, logger());
  expect(server.embeddings.requests[first]!.input[0]).toHaveLength(EMBED_MAX_CHARS);
  expect(reserved[0]!.tokens).toBe(EMBED_MAX_CHARS);
});

it('falls back on any failure, settling nothing for a failed call, logging no key', async () => {
  const signal = new AbortController().signal;
  for (const fault of ['server_error', 'bad_request'] as const) {
    server.embeddings.fault = fault;
    const { p, settled } = purse();
    const log = logger();
    expect(await embedder().embed('revenue', p, signal, log)).toBeUndefined();
    expect(settled).toEqual([{ tokens: 0, costUsd: 0 }]);
    expect(log.lines.join('\n')).toMatch(/an embedding failed/);
    expect(log.lines.join('\n')).not.toContain(KEY);
  }
  server.embeddings.fault = 'bad_vector';
  const billedVector = purse();
  expect(await embedder().embed('revenue', billedVector.p, signal, logger())).toBeUndefined();
  expect(billedVector.settled[0]!.tokens).toBeGreaterThan(0); // the endpoint billed it
  server.embeddings.fault = null;
  // A wrong key: a 401, no key in the log.
  const wrong = logger();
  expect(await embedder('sk-wrong-key-123').embed('revenue', purse().p, signal, wrong)).toBeUndefined();
  expect(wrong.lines.join('\n')).not.toContain('sk-wrong-key-123');
  // A purse that cannot pay: no call at all.
  const first = server.embeddings.requests.length;
  expect(await embedder().embed('revenue', purse(true).p, signal, logger())).toBeUndefined();
  expect(server.embeddings.requests.length).toBe(first);
});

it('a call the endpoint may have billed but never answered readably is charged its worst case, as a model call is', async () => {
  // A hostile or overloaded endpoint: it takes the request (and may bill it), then answers too late, answers a body
  // that is no JSON, or the run is cancelled while it works. None of that is a refusal: the bill must not be lower.
  let mode: 'slow' | 'garbled' | 'null' = 'slow';
  const sockets = new Set<Socket>();
  const hostile = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (mode === 'garbled') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"object":"list","data":[{"embedding":[0.1,0.2');
      }
      if (mode === 'null') {
        // JSON, but no answer at all: nothing says what it billed.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('null');
      }
      // slow: never answers within the call's time limit
    });
  });
  hostile.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const address = hostile.address() as AddressInfo;
  try {
    const make = () =>
      new NoteEmbedder(
        new OpenAIEmbeddings(MODEL, {
          apiKey: KEY,
          baseURL: `http://127.0.0.1:${address.port}/v1`,
          fetch: globalThis.fetch,
        }),
        { model: MODEL, inputPerMillion: 0.02, secret: KEY, timeoutMs: 200 },
      );
    for (const how of ['slow', 'garbled', 'null', 'cancelled'] as const) {
      mode = how === 'cancelled' ? 'slow' : how;
      const { p, reserved, settled } = purse();
      const controller = new AbortController();
      if (how === 'cancelled') setTimeout(() => controller.abort(new Error('cancelled')), 50);
      const log = logger();
      expect(await make().embed('total revenue by region', p, controller.signal, log), how).toBeUndefined();
      expect(settled, how).toEqual([reserved[0]]);
      expect(log.lines.join('\n')).not.toContain(KEY);
    }
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => hostile.close(resolve));
  }
});

it('a reply too large for any vector is cut off as it arrives, not read whole, and charged its worst case', async () => {
  // A hostile endpoint streams an endless vector: the call must stop reading long before its time limit.
  let written = 0;
  const hostile = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"object":"list","data":[{"object":"embedding","index":0,"embedding":[');
      const chunk = '0.123456789,'.repeat(8_000);
      const pump = () => {
        while (!res.destroyed && written < 256 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
  });
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const address = hostile.address() as AddressInfo;
  try {
    // The worker's own transport (no fetch given), as in production.
    const huge = new NoteEmbedder(
      new OpenAIEmbeddings(MODEL, { apiKey: KEY, baseURL: `http://127.0.0.1:${address.port}/v1` }),
      { model: MODEL, inputPerMillion: 0.02, secret: KEY, timeoutMs: 20_000 },
    );
    const { p, reserved, settled } = purse();
    const log = logger();
    expect(await huge.embed('revenue', p, new AbortController().signal, log)).toBeUndefined();
    expect(written).toBeLessThan(64 * 1024 * 1024);
    expect(settled).toEqual([reserved[0]]);
    expect(log.lines.join('\n')).toMatch(/an embedding failed/);
  } finally {
    hostile.closeAllConnections();
    await new Promise((resolve) => hostile.close(resolve));
  }
}, 30_000);
