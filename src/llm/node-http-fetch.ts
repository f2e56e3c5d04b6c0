// A `fetch` for the `openai` client over node:http/https with keep-alive agents.
//
// Why: Node's built-in fetch (undici) builds a Request, a fetch controller, web streams and a chain of abort
// signals for every call. In the benchmark (scenario 2, bench/README.md) that is 0.36 ms of CPU per model call
// against 0.20 ms for this transport, and a worker makes one call per agent step. The client still does everything
// else (headers, timeouts, retries' bookkeeping, error classes); this only moves bytes.
//
// It handles what the client sends for chat completions: a string or byte body (or none). Anything else
// (FormData, streams, Blobs: uploads) goes to the built-in fetch unchanged.
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { BufferedResponse } from './buffered-response.js';

export type Fetch = typeof globalThis.fetch;

export interface NodeHttpFetchOptions {
  /**
   * Idle sockets kept open per host. Default: all of them. The sockets in use are bounded by the calls in flight
   * (a worker's concurrency), and a socket closed for want of room is a new TCP connection on the next call: at
   * 2,000 calls in flight and a bound of 256, seven calls in eight paid for a connect and the server an accept.
   */
  maxFreeSockets?: number;
  /** Certificate authorities to trust for https instead of Node's (an endpoint behind a private CA). */
  ca?: string | Buffer;
  /**
   * Bytes a reply's body may have, as received and as decoded: past it the call fails as a body that could not be
   * read (ResponseBodyError), without reading the rest. Default: no bound.
   */
  maxBodyBytes?: number;
}

/** Statuses whose Response must have a null body (the Response constructor throws otherwise). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * The reply's head arrived but its body did not: the connection was cut, or the body could not be decoded. The
 * endpoint may have done (and billed) the work, unlike a call that never got an answer.
 */
export class ResponseBodyError extends Error {
  override readonly name = 'ResponseBodyError';
}

const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

export function createNodeHttpFetch(options: NodeHttpFetchOptions = {}): Fetch {
  const agentOptions = {
    keepAlive: true,
    maxFreeSockets: options.maxFreeSockets ?? Infinity,
    scheduling: 'lifo' as const,
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent({ ...agentOptions, ...(options.ca ? { ca: options.ca } : {}) });

  return async function nodeHttpFetch(input, init = {}) {
    const body = init.body;
    const simpleBody =
      body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    if (!simpleBody || input instanceof Request) return globalThis.fetch(input, init);
    const url = input instanceof URL ? input : new URL(String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return globalThis.fetch(input, init);
    const agent = url.protocol === 'https:' ? httpsAgent : httpAgent;
    const response = await send(url, init, agent, options.maxBodyBytes ?? Infinity);
    // A redirect means the request was not served: the built-in fetch sends it again and follows the redirects
    // as the Fetch standard says (methods, bodies and credentials across origins). Rare for a model endpoint.
    if (REDIRECT_STATUS.has(response.status) && response.headers.has('location')) {
      return globalThis.fetch(input, init);
    }
    return response;
  };
}

function send(url: URL, init: RequestInit, agent: http.Agent, maxBodyBytes: number): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const body = init.body as string | Uint8Array | null | undefined;
    const method = (init.method ?? 'GET').toUpperCase();
    const headers = headersObject(init.headers);
    if (body !== undefined && body !== null && headers['content-length'] === undefined) {
      headers['content-length'] = String(
        typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength,
      );
    }
    const request = (url.protocol === 'https:' ? https : http).request(url, { method, headers, agent });
    // One outcome per call, whichever comes first: the whole body, an abort, or a socket error before or while
    // the body arrives. A call that fails before its body is complete destroys its socket, so no half-read socket
    // goes back to the pool (a body read whole but undecodable leaves its socket in a clean state).
    let done = false;
    let headArrived = false;
    const finish = (outcome: () => void) => {
      if (done) return;
      done = true;
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (error: Error) => {
      if (done) return;
      finish(() => {
        if (error.name === 'AbortError') reject(error);
        else {
          const cause = headArrived ? new ResponseBodyError(error.message, { cause: error }) : error;
          reject(new TypeError('fetch failed', { cause }));
        }
      });
      request.destroy();
    };
    const onAbort = () => fail(abortError(signal));
    signal?.addEventListener('abort', onAbort, { once: true });

    request.on('error', fail);
    request.on('response', (incoming) => {
      headArrived = true;
      const chunks: Buffer[] = [];
      let received = 0;
      incoming.on('error', fail);
      incoming.on('aborted', () => fail(new Error('the connection closed before the body was complete')));
      incoming.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxBodyBytes) fail(new Error(`the body is larger than ${maxBodyBytes} bytes`));
        else chunks.push(chunk);
      });
      incoming.on('end', () => {
        const status = incoming.statusCode ?? 0;
        const noBody = NULL_BODY_STATUS.has(status) || method === 'HEAD';
        let content: Buffer | null = null;
        if (!noBody) {
          try {
            content = decoded(Buffer.concat(chunks), incoming.headers['content-encoding'], maxBodyBytes);
          } catch (error) {
            // An error reply whose body cannot be read still tells its status and headers (a 429's retry-after).
            if (status >= 200 && status < 300) {
              fail(error as Error);
              return;
            }
            content = null;
          }
        }
        let response: Response;
        try {
          response = new BufferedResponse(content, {
            status,
            statusText: incoming.statusMessage ?? '',
            headers: responseHeaders(incoming.rawHeaders),
          }).asResponse();
        } catch (error) {
          fail(error as Error);
          return;
        }
        Object.defineProperty(response, 'url', { value: url.href });
        finish(() => resolve(response));
      });
    });
    request.end(body ?? undefined);
  });
}

function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return new DOMException('This operation was aborted', 'AbortError');
}

/** The `openai` client's telemetry headers (`x-stainless-os`, `-arch`, ...): nothing an API needs. */
const TELEMETRY_HEADER = 'x-stainless-';

function headersObject(init: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!init) return out;
  // Headers and pairs iterate as [name, value]; a record's values may be lists (Node's own header type).
  const entries = init instanceof Headers || Array.isArray(init) ? init : Object.entries(init);
  for (const [name, value] of entries as Iterable<[string, string | readonly string[]]>) {
    const key = name.toLowerCase();
    if (key.startsWith(TELEMETRY_HEADER)) continue;
    out[key] = typeof value === 'string' ? value : value.join(', ');
  }
  return out;
}

function responseHeaders(raw: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}

/** The body as sent before content-encoding, as fetch gives it. The request asks for none, but proxies may. */
function decoded(raw: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  if (raw.length === 0) return raw;
  // A small body may decode to a huge one: decoding stops (throws) past the bound.
  const bound = Number.isFinite(maxBytes) ? { maxOutputLength: maxBytes } : {};
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.gunzipSync(raw, bound);
    case 'deflate':
      // Meant to be zlib-wrapped; some servers send it raw.
      try {
        return zlib.inflateSync(raw, bound);
      } catch {
        return zlib.inflateRawSync(raw, bound);
      }
    case 'br':
      return zlib.brotliDecompressSync(raw, bound);
    default:
      return raw;
  }
}
