// The model calls' transport (src/llm/node-http-fetch.ts) against real HTTP servers: what the `openai` client
// sends arrives intact, compressed and empty bodies come back as fetch gives them, sockets are reused, and every
// way a call can end (abort, timeout, refused, cut mid-body) becomes the ModelApiError the kernel expects.
// The kernel's own error tests (429 with retry-after, 500, garbled bodies) run over this transport too.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ModelApiError } from '../../../src/kernel/errors.js';
import { createNodeHttpFetch } from '../../../src/llm/node-http-fetch.js';
import { MODEL_REPLY_MAX_BYTES } from '../../../src/llm/openai-client.js';
import { OpenAIChatModel } from '../../../src/llm/openai-chat-model.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const completion = (content: string) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }],
    usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
  });

let server: http.Server;
let baseURL: string;
let handler: Handler;
let connections = 0;
const received: { headers: http.IncomingHttpHeaders; body: string; path: string }[] = [];
const openSockets = new Set<Socket>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ headers: req.headers, body, path: req.url ?? '' });
      handler(req, body, res);
    });
  });
  server.on('connection', (socket) => {
    connections += 1;
    openSockets.add(socket);
    socket.on('close', () => openSockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  for (const socket of openSockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.length = 0;
  handler = (_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(completion('ok'));
  };
});

const model = () => new OpenAIChatModel({ model: 'gpt-4o-mini', apiKey: 'sk-test-key', baseURL });
const ask = (
  chat: OpenAIChatModel,
  content = 'hello',
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
) =>
  chat.complete(
    { messages: [{ role: 'user', content }], maxTokens: 50, temperature: 0 },
    { signal: options.signal ?? new AbortController().signal, timeoutMs: options.timeoutMs ?? 5_000 },
  );
const call = (content?: string, options?: { signal?: AbortSignal; timeoutMs?: number }) =>
  ask(model(), content, options);
const failure = async (promise: Promise<unknown>): Promise<ModelApiError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelApiError);
  return error as ModelApiError;
};

describe('the openai client over the node:http transport', () => {
  it('leaves the client’s telemetry headers off with a fetch of the caller’s own too', async () => {
    const chat = new OpenAIChatModel({
      model: 'gpt-4o-mini',
      apiKey: 'sk-test-key',
      baseURL,
      fetch: globalThis.fetch,
    });
    await ask(chat);
    const [request] = received;
    expect(Object.keys(request?.headers ?? {}).filter((name) => name.startsWith('x-stainless'))).toEqual([]);
    expect(request?.headers['user-agent']).toMatch(/^OpenAI\/JS /);
  });

  it('sends the request as the client built it and parses the reply', async () => {
    const content = 'Grüße, 東京 — "quoted" \\ and a newline\n';
    const result = await call(content);
    expect(result.message.content).toBe('ok');
    expect(result.usage).toEqual({ promptTokens: 12, completionTokens: 3 });
    const [request] = received;
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test-key');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(Number(request?.headers['content-length'])).toBe(Buffer.byteLength(request?.body ?? ''));
    // The client's telemetry headers are left off; what the API reads stays.
    expect(Object.keys(request?.headers ?? {}).filter((name) => name.startsWith('x-stainless'))).toEqual([]);
    expect(request?.headers['user-agent']).toMatch(/^OpenAI\/JS /);
    expect(JSON.parse(request?.body ?? '{}')).toMatchObject({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content }],
      max_tokens: 50,
    });
  });

  it('reuses one keep-alive socket for calls made one after another', async () => {
    const before = connections;
    const chat = model();
    for (let i = 0; i < 20; i++) {
      await ask(chat, `call ${i}`);
    }
    expect(received).toHaveLength(20);
    expect(connections - before).toBeLessThanOrEqual(1);
  });

  it('decodes a gzip-encoded reply, as fetch would', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(zlib.gzipSync(completion('compressed')));
    };
    expect((await call()).message.content).toBe('compressed');
  });

  it('keeps the headers of an error reply: a 429 carries its retry-after', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '1500' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
    };
    const error = await failure(call());
    expect(error).toMatchObject({ code: 'http_429', retryable: true, status: 429, retryAfterMs: 1500 });
  });

  it('an abort mid-call ends the call at once and closes its socket', async () => {
    let requestClosed = false;
    handler = (req) => req.socket.on('close', () => (requestClosed = true)); // never answers
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('job cancelled')), 100);
    const started = Date.now();
    const error = await failure(call('hi', { signal: controller.signal }));
    expect(error).toMatchObject({ code: 'aborted', retryable: false });
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect.poll(() => requestClosed).toBe(true);
  });

  it('a call that outlasts its time limit is a retryable timeout', async () => {
    handler = () => undefined; // never answers
    const error = await failure(call('hi', { timeoutMs: 200 }));
    expect(error).toMatchObject({ code: 'timeout', retryable: true });
  });

  it('a connection cut in the middle of the body is a garbled reply: retryable, and charged', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"id": "c1", "choices": [');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const error = await failure(call());
    // malformed_response is charged its whole reservation (model-call.ts): the endpoint may have billed it.
    expect(error).toMatchObject({ code: 'malformed_response', retryable: true });
  });

  it('a 2xx body that cannot be decoded is a garbled reply: retryable, and charged', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end('this is not gzip');
    };
    expect(await failure(call())).toMatchObject({ code: 'malformed_response', retryable: true });
  });

  it('with maxBodyBytes, a body past it, as sent or once decoded (a gzip bomb), is a garbled reply', async () => {
    const bounded = createNodeHttpFetch({ maxBodyBytes: 64 * 1024 });
    const chat = new OpenAIChatModel({
      model: 'gpt-4o-mini',
      apiKey: 'sk-test-key',
      baseURL,
      fetch: bounded,
    });
    // A few kB of gzip that decode to 8 MB, then a plain body past the bound.
    const bomb = zlib.gzipSync(`${completion('x').slice(0, -1)},"pad":"${' '.repeat(8 * 1024 * 1024)}"}`);
    expect(bomb.length).toBeLessThan(64 * 1024);
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(bomb);
    };
    expect(await failure(ask(chat))).toMatchObject({ code: 'malformed_response' });
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${completion('x').slice(0, -1)},"pad":"${' '.repeat(128 * 1024)}"}`);
    };
    expect(await failure(ask(chat))).toMatchObject({ code: 'malformed_response' });
    // Within it, a reply reads as before.
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(zlib.gzipSync(completion('small')));
    };
    expect((await ask(chat)).message.content).toBe('small');
  });

  it('a model reply past MODEL_REPLY_MAX_BYTES fails as a garbled reply without being read whole', async () => {
    let sent = 0;
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id": "c1", "choices": [{"message": {"content": "');
      const chunk = 'x'.repeat(1024 * 1024);
      const more = () => {
        // An endless reply: stops only when the client hangs up.
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    };
    expect(await failure(call())).toMatchObject({ code: 'malformed_response', retryable: true });
    expect(sent).toBeLessThan(MODEL_REPLY_MAX_BYTES + 8 * 1024 * 1024);
  });

  it('an empty 429 marked gzip still gives its status and retry-after', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(429, { 'content-encoding': 'gzip', 'retry-after': '2', 'content-length': '0' });
      res.end();
    };
    expect(await failure(call())).toMatchObject({ code: 'http_429', retryable: true, retryAfterMs: 2_000 });
  });

  it('an error reply whose body cannot be decoded keeps its status', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'content-encoding': 'br' });
      res.end('not brotli at all');
    };
    expect(await failure(call())).toMatchObject({ code: 'http_503', retryable: true, status: 503 });
  });

  it('follows a redirect of the base URL, as fetch would, sending the request again', async () => {
    handler = (req, _body, res) => {
      if (req.url?.startsWith('/old/')) {
        res.writeHead(307, { location: req.url.replace('/old/', '/v1/').replace('/v1/v1/', '/v1/') });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(completion('moved'));
    };
    const moved = new OpenAIChatModel({ model: 'm', apiKey: 'k', baseURL: baseURL.replace('/v1', '/old') });
    const result = await ask(moved);
    expect(result.message.content).toBe('moved');
    expect(received.map((r) => `${r.path} ${r.body.length > 0}`)).toEqual([
      '/old/chat/completions true',
      '/old/chat/completions true',
      '/v1/chat/completions true',
    ]);
  });

  it('a refused connection is a retryable connection error', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const chat = new OpenAIChatModel({ model: 'm', apiKey: 'k', baseURL: `http://127.0.0.1:${port}/v1` });
    const error = await failure(ask(chat));
    expect(error).toMatchObject({ code: 'connection', retryable: true });
  });
});

describe('createNodeHttpFetch as a fetch', () => {
  const fetch = createNodeHttpFetch();

  it('gives a 204 a null body and the URL it fetched, even one marked gzip', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(204, { 'x-request-id': 'r1', 'content-encoding': 'gzip' });
      res.end();
    };
    const response = await fetch(`${baseURL}/empty`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
    expect(response.headers.get('x-request-id')).toBe('r1');
    expect(response.url).toBe(`${baseURL}/empty`);
  });

  it('a HEAD reply has no body to decode', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': '120' });
      res.end();
    };
    const response = await fetch(`${baseURL}/models`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });

  it('hands bodies it does not stream itself (a form upload) to the built-in fetch', async () => {
    handler = (req, body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(
        `${req.headers['content-type']?.split(';')[0]} ${body.includes('name="purpose"') ? 'form' : '?'}`,
      );
    };
    const form = new FormData();
    form.set('purpose', 'batch');
    const response = await fetch(`${baseURL}/files`, { method: 'POST', body: form });
    expect(await response.text()).toBe('multipart/form-data form');
  });

  it('rejects at once when the signal is already aborted, sending nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(fetch(`${baseURL}/x`, { signal: controller.signal })).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(received).toHaveLength(0);
  });
});

describe('over https', () => {
  it('calls an endpoint behind a certificate authority it is given, and refuses one it does not trust', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'af-tls-'));
    let tlsServer: https.Server | undefined;
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost']
          .concat(['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'])
          .concat(['-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')]),
        { stdio: 'ignore' },
      );
      const cert = readFileSync(join(dir, 'cert.pem'));
      tlsServer = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(completion('over tls'));
        });
      });
      await new Promise<void>((resolve) => tlsServer?.listen(0, '127.0.0.1', resolve));
      const url = `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}/v1`;
      const over = (fetch: typeof globalThis.fetch) =>
        ask(new OpenAIChatModel({ model: 'm', apiKey: 'k', baseURL: url, fetch }));
      expect((await over(createNodeHttpFetch({ ca: cert }))).message.content).toBe('over tls');
      const untrusted = await failure(over(createNodeHttpFetch()));
      expect(untrusted).toMatchObject({ code: 'connection', retryable: true });
      const causes: string[] = [];
      for (let e: unknown = untrusted; e instanceof Error; e = e.cause) causes.push(e.message);
      expect(causes.join(' ← ')).toMatch(/self[- ]signed/i);
    } finally {
      tlsServer?.closeAllConnections();
      await new Promise((resolve) => (tlsServer ? tlsServer.close(resolve) : resolve(undefined)));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
