// A fetch Response for a body already read whole into memory (node-http-fetch.ts reads every reply whole).
//
// Why: `new Response(buffer)` builds a web ReadableStream and its controller for every reply, and `json()` then
// reads the buffer back out of that stream; at 2,000 calls in flight those streams were 2 % of everything the
// worker allocated. Here `text()` and `json()` read the buffer directly; anything else (`body`, `arrayBuffer()`,
// `blob()`, ...) gets a standard Response made on first use, so every reader sees fetch's behaviour.

/** The part of Response this class inherits as is (the type of Response declares its methods as properties). */
interface ResponseHead {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly url: string;
}
const ResponseWithoutBody = Response as unknown as new (body: null, init: ResponseInit) => ResponseHead;

/** A real Response (instanceof holds) with the body given as a buffer; `asResponse()` types it as one. */
export class BufferedResponse extends ResponseWithoutBody {
  readonly #content: Buffer | null;
  #standard: Response | undefined;
  #used = false;

  constructor(content: Buffer | null, init: ResponseInit) {
    super(null, init);
    this.#content = content;
  }

  get body(): ReadableStream<Uint8Array> | null {
    return this.standard().body;
  }

  get bodyUsed(): boolean {
    return this.#used || (this.#standard?.bodyUsed ?? false);
  }

  async text(): Promise<string> {
    if (this.#standard) return this.#standard.text();
    return utf8(this.take());
  }

  async json(): Promise<unknown> {
    if (this.#standard) return this.#standard.json();
    return JSON.parse(utf8(this.take())) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    this.refuseIfUsed();
    return this.standard().arrayBuffer();
  }

  async blob(): Promise<Blob> {
    this.refuseIfUsed();
    return this.standard().blob();
  }

  async formData(): Promise<FormData> {
    this.refuseIfUsed();
    return this.standard().formData();
  }

  clone(): Response {
    if (this.bodyUsed) throw new TypeError('Response.clone: Body has already been consumed.');
    if (this.#standard) return this.#standard.clone();
    const copy = new BufferedResponse(this.#content, this.init());
    Object.defineProperty(copy, 'url', { value: this.url });
    return copy.asResponse();
  }

  asResponse(): Response {
    return this as unknown as Response;
  }

  /** The body, once: a second read rejects as fetch's does. */
  private take(): Buffer {
    this.refuseIfUsed();
    this.#used = true;
    return this.#content ?? Buffer.alloc(0);
  }

  private refuseIfUsed(): void {
    if (this.#used) throw new TypeError('Body is unusable: Body has already been read');
  }

  /** A body read by text() or json() is not offered again (the standard Response then has none). */
  private standard(): Response {
    this.#standard ??= new Response(this.#used ? null : this.#content, this.init());
    return this.#standard;
  }

  private init(): ResponseInit {
    return { status: this.status, statusText: this.statusText, headers: this.headers };
  }
}

/** UTF-8 as fetch decodes it: a byte-order mark at the start is dropped. */
function utf8(bytes: Buffer): string {
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return (bom ? bytes.subarray(3) : bytes).toString('utf8');
}
