// The Response node-http-fetch gives the client: text() and json() read the buffer itself, everything else
// behaves as fetch's own Response over the same bytes.
import { describe, expect, it } from 'vitest';
import { BufferedResponse } from '../../../src/llm/buffered-response.js';

const reply = (
  text: string,
  init: ResponseInit = { status: 200, headers: { 'content-type': 'application/json' } },
) => new BufferedResponse(Buffer.from(text), init).asResponse();

describe('a buffered Response', () => {
  it('is a Response with its status and headers, and parses its body', async () => {
    const response = reply('{"id":"chatcmpl-1","n":2}');
    expect(response).toBeInstanceOf(Response);
    expect([response.status, response.ok, response.headers.get('content-type')]).toEqual([
      200,
      true,
      'application/json',
    ]);
    expect(response.bodyUsed).toBe(false);
    expect(await response.json()).toEqual({ id: 'chatcmpl-1', n: 2 });
    expect(response.bodyUsed).toBe(true);
  });

  it('is read once, as fetch allows: a second read rejects', async () => {
    const response = reply('{"a":1}');
    await response.text();
    await expect(response.json()).rejects.toThrow(TypeError);
    await expect(response.arrayBuffer()).rejects.toThrow(TypeError);
    expect(() => response.clone()).toThrow(TypeError);
  });

  it('drops a byte-order mark as fetch does, and rejects malformed JSON', async () => {
    expect(await new BufferedResponse(Buffer.from('\uFEFF{"a":1}'), {}).asResponse().json()).toEqual({
      a: 1,
    });
    await expect(reply('{"a":').json()).rejects.toThrow(SyntaxError);
  });

  it('gives the same bytes as a stream, an ArrayBuffer and a clone', async () => {
    const response = reply('héllo', {
      status: 429,
      statusText: 'Too Many Requests',
      headers: { 'retry-after': '2' },
    });
    Object.defineProperty(response, 'url', { value: 'http://model.test/v1/chat/completions' });
    const copy = response.clone();
    expect([copy.status, copy.statusText, copy.headers.get('retry-after'), copy.url]).toEqual([
      429,
      'Too Many Requests',
      '2',
      'http://model.test/v1/chat/completions',
    ]);
    expect(Buffer.from(await copy.arrayBuffer()).toString()).toBe('héllo');
    const chunks: Uint8Array[] = [];
    for await (const chunk of response.body!) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString()).toBe('héllo');
    expect(response.bodyUsed).toBe(true);
  });

  it('has an empty text when there is no body', async () => {
    const response = new BufferedResponse(null, { status: 204 }).asResponse();
    expect(response.body).toBeNull();
    expect(await response.text()).toBe('');
  });
});
